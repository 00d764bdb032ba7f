//! The first half of the `--many-tools` catalog's services (data only; see `many/mod.rs`).

use super::{Domain, Entity, Extra, LIMIT, REPO};

/// Code hosting, calendars, email, databases, storage, tickets, CRM.
pub(super) const DOMAINS: &[Domain] = &[
    Domain {
        service: "github",
        product: "GitHub",
        entities: &[
            Entity {
                name: "issue",
                plural: "issues",
                what: "an issue (a bug report or task) in a repository",
                scope: &[REPO],
                fields: &[
                    ("title", "string", "Issue title", true),
                    ("body", "string", "Markdown body", false),
                    ("labels", "array", "Label names", false),
                    ("assignees", "array", "Logins to assign", false),
                ],
                filters: &[
                    ("state", "string", "open, closed or all", false),
                    (
                        "labels",
                        "array",
                        "Only issues with all these labels",
                        false,
                    ),
                ],
            },
            Entity {
                name: "pull_request",
                plural: "pull requests",
                what: "a pull request proposing changes from one branch into another",
                scope: &[REPO],
                fields: &[
                    ("title", "string", "Pull request title", true),
                    ("head", "string", "Branch with the changes", true),
                    ("base", "string", "Branch to merge into", true),
                    ("draft", "boolean", "Open as a draft", false),
                ],
                filters: &[
                    ("state", "string", "open, closed or all", false),
                    ("author", "string", "Login of the author", false),
                ],
            },
        ],
        extras: &[
            Extra {
                name: "github_merge_pull_request",
                description: "Merge an open pull request into its base branch (merge commit, squash or rebase).",
                params: &[
                    REPO,
                    ("number", "integer", "Pull request number", true),
                    ("method", "string", "merge, squash or rebase", false),
                ],
            },
            Extra {
                name: "github_add_issue_comment",
                description: "Add a comment to an issue or pull request conversation.",
                params: &[
                    REPO,
                    ("number", "integer", "Issue or pull request number", true),
                    ("body", "string", "Comment text in Markdown", true),
                ],
            },
            Extra {
                name: "github_list_commits",
                description: "List the commits of a branch, newest first, with author and message.",
                params: &[
                    REPO,
                    (
                        "branch",
                        "string",
                        "Branch name (default branch if omitted)",
                        false,
                    ),
                    LIMIT,
                ],
            },
            Extra {
                name: "github_create_branch",
                description: "Create a new branch from an existing branch or commit.",
                params: &[
                    REPO,
                    ("branch", "string", "Name of the new branch", true),
                    (
                        "from",
                        "string",
                        "Branch or commit SHA to start from",
                        false,
                    ),
                ],
            },
            Extra {
                name: "github_request_review",
                description: "Ask people to review a pull request.",
                params: &[
                    REPO,
                    ("number", "integer", "Pull request number", true),
                    ("reviewers", "array", "Logins of the reviewers", true),
                ],
            },
        ],
    },
    Domain {
        service: "calendar",
        product: "Calendar",
        entities: &[Entity {
            name: "event",
            plural: "events",
            what: "a calendar event (meeting or appointment) with a start and an end",
            scope: &[(
                "calendar_id",
                "string",
                "Calendar id (primary if omitted)",
                false,
            )],
            fields: &[
                ("summary", "string", "Event title", true),
                ("start", "string", "Start time, RFC 3339", true),
                ("end", "string", "End time, RFC 3339", true),
                (
                    "attendees",
                    "array",
                    "Email addresses of the attendees",
                    false,
                ),
                ("location", "string", "Where it takes place", false),
            ],
            filters: &[
                (
                    "time_min",
                    "string",
                    "Only events ending after this time",
                    false,
                ),
                (
                    "time_max",
                    "string",
                    "Only events starting before this time",
                    false,
                ),
            ],
        }],
        extras: &[
            Extra {
                name: "calendar_find_free_slots",
                description: "Find time slots when all the given people are free, for scheduling a meeting.",
                params: &[
                    ("attendees", "array", "Email addresses", true),
                    ("duration_minutes", "integer", "Length of the meeting", true),
                    (
                        "within_days",
                        "integer",
                        "How many days ahead to look",
                        false,
                    ),
                ],
            },
            Extra {
                name: "calendar_respond_to_invitation",
                description: "Accept, decline or tentatively accept a meeting invitation.",
                params: &[
                    ("event_id", "string", "The invitation's event id", true),
                    (
                        "response",
                        "string",
                        "accepted, declined or tentative",
                        true,
                    ),
                ],
            },
        ],
    },
    Domain {
        service: "email",
        product: "Mail",
        entities: &[
            Entity {
                name: "draft",
                plural: "drafts",
                what: "an unsent email draft",
                scope: &[],
                fields: &[
                    ("to", "array", "Recipient addresses", true),
                    ("subject", "string", "Subject line", true),
                    ("body", "string", "Message body", true),
                    ("cc", "array", "Copy recipients", false),
                ],
                filters: &[("query", "string", "Words in the draft", false)],
            },
            Entity {
                name: "label",
                plural: "labels",
                what: "a mailbox label (folder) messages can be filed under",
                scope: &[],
                fields: &[
                    ("name", "string", "Label name", true),
                    ("color", "string", "Hex colour", false),
                ],
                filters: &[],
            },
        ],
        extras: &[
            Extra {
                name: "email_send_message",
                description: "Send an email message to one or more recipients, with optional attachments.",
                params: &[
                    ("to", "array", "Recipient addresses", true),
                    ("subject", "string", "Subject line", true),
                    ("body", "string", "Plain text or HTML body", true),
                    ("attachments", "array", "File ids to attach", false),
                ],
            },
            Extra {
                name: "email_search_messages",
                description: "Search the mailbox for messages by sender, subject, words or date.",
                params: &[
                    (
                        "query",
                        "string",
                        "Search query, e.g. from:alice subject:invoice",
                        true,
                    ),
                    LIMIT,
                ],
            },
            Extra {
                name: "email_read_message",
                description: "Read one email message: headers, body and attachment names.",
                params: &[("message_id", "string", "The message id", true)],
            },
            Extra {
                name: "email_reply_to_message",
                description: "Reply to an email message, keeping the thread.",
                params: &[
                    ("message_id", "string", "Message to reply to", true),
                    ("body", "string", "Reply text", true),
                    ("reply_all", "boolean", "Reply to every recipient", false),
                ],
            },
            Extra {
                name: "email_archive_message",
                description: "Archive an email message: remove it from the inbox without deleting it.",
                params: &[("message_id", "string", "The message id", true)],
            },
        ],
    },
    Domain {
        service: "db",
        product: "the SQL database",
        entities: &[Entity {
            name: "table",
            plural: "tables",
            what: "a database table",
            scope: &[("schema", "string", "Schema name (public if omitted)", false)],
            fields: &[
                ("name", "string", "Table name", true),
                (
                    "columns",
                    "array",
                    "Column definitions, e.g. id bigint primary key",
                    true,
                ),
            ],
            filters: &[],
        }],
        extras: &[
            Extra {
                name: "db_run_query",
                description: "Run a read-only SQL SELECT query against the database and return the rows.",
                params: &[
                    ("sql", "string", "The SELECT statement", true),
                    ("params", "array", "Positional parameters", false),
                    LIMIT,
                ],
            },
            Extra {
                name: "db_execute_statement",
                description: "Execute a SQL statement that changes data (INSERT, UPDATE, DELETE) inside a transaction.",
                params: &[
                    ("sql", "string", "The statement", true),
                    ("params", "array", "Positional parameters", false),
                ],
            },
            Extra {
                name: "db_describe_table",
                description: "Show a table's columns, types, indexes and constraints.",
                params: &[("table", "string", "Table name", true)],
            },
            Extra {
                name: "db_explain_query",
                description: "Show the query planner's execution plan for a SQL query, to find why it is slow.",
                params: &[("sql", "string", "The query", true)],
            },
        ],
    },
    Domain {
        service: "storage",
        product: "cloud object storage",
        entities: &[Entity {
            name: "bucket",
            plural: "buckets",
            what: "a storage bucket holding objects",
            scope: &[],
            fields: &[
                ("name", "string", "Globally unique bucket name", true),
                ("region", "string", "Region, e.g. eu-west-1", false),
                (
                    "public",
                    "boolean",
                    "Whether objects are publicly readable",
                    false,
                ),
            ],
            filters: &[(
                "prefix",
                "string",
                "Only buckets whose name starts with this",
                false,
            )],
        }],
        extras: &[
            Extra {
                name: "storage_upload_object",
                description: "Upload a file as an object into a cloud storage bucket.",
                params: &[
                    ("bucket", "string", "Bucket name", true),
                    ("key", "string", "Object key (path)", true),
                    ("content_base64", "string", "The bytes, base64", true),
                    ("content_type", "string", "MIME type", false),
                ],
            },
            Extra {
                name: "storage_download_object",
                description: "Download an object's bytes from a cloud storage bucket.",
                params: &[
                    ("bucket", "string", "Bucket name", true),
                    ("key", "string", "Object key", true),
                ],
            },
            Extra {
                name: "storage_list_objects",
                description: "List the objects in a bucket under a prefix, with sizes and modification times.",
                params: &[
                    ("bucket", "string", "Bucket name", true),
                    ("prefix", "string", "Key prefix", false),
                    LIMIT,
                ],
            },
            Extra {
                name: "storage_presign_url",
                description: "Create a temporary signed URL that lets anyone download one object until it expires.",
                params: &[
                    ("bucket", "string", "Bucket name", true),
                    ("key", "string", "Object key", true),
                    ("expires_seconds", "integer", "Validity in seconds", false),
                ],
            },
        ],
    },
    Domain {
        service: "tickets",
        product: "the help desk",
        entities: &[Entity {
            name: "ticket",
            plural: "tickets",
            what: "a customer support ticket",
            scope: &[],
            fields: &[
                ("subject", "string", "Short summary", true),
                ("description", "string", "What the customer reported", true),
                ("priority", "string", "low, normal, high or urgent", false),
                ("requester_email", "string", "Customer email", false),
            ],
            filters: &[
                ("status", "string", "new, open, pending, solved", false),
                ("assignee", "string", "Agent id", false),
            ],
        }],
        extras: &[
            Extra {
                name: "tickets_assign_ticket",
                description: "Assign a support ticket to an agent or a group.",
                params: &[
                    ("ticket_id", "string", "The ticket", true),
                    ("agent_id", "string", "Agent to assign", false),
                    ("group", "string", "Group to assign", false),
                ],
            },
            Extra {
                name: "tickets_escalate_ticket",
                description: "Escalate a support ticket to the next support tier and raise its priority.",
                params: &[
                    ("ticket_id", "string", "The ticket", true),
                    ("reason", "string", "Why it needs escalation", true),
                ],
            },
        ],
    },
    Domain {
        service: "crm",
        product: "the CRM",
        entities: &[
            Entity {
                name: "contact",
                plural: "contacts",
                what: "a customer contact (person) with name, email and company",
                scope: &[],
                fields: &[
                    ("first_name", "string", "First name", true),
                    ("last_name", "string", "Last name", true),
                    ("email", "string", "Email address", false),
                    ("company", "string", "Company name", false),
                    ("phone", "string", "Phone number", false),
                ],
                filters: &[("company", "string", "Only contacts of this company", false)],
            },
            Entity {
                name: "deal",
                plural: "deals",
                what: "a sales deal (opportunity) in the pipeline",
                scope: &[],
                fields: &[
                    ("name", "string", "Deal name", true),
                    ("amount", "integer", "Value in cents", false),
                    ("stage", "string", "Pipeline stage", false),
                    ("close_date", "string", "Expected close date", false),
                ],
                filters: &[
                    ("stage", "string", "Pipeline stage", false),
                    ("owner", "string", "Sales rep", false),
                ],
            },
        ],
        extras: &[Extra {
            name: "crm_log_activity",
            description: "Log a call, meeting or note against a contact or deal in the CRM.",
            params: &[
                ("contact_id", "string", "The contact", false),
                ("deal_id", "string", "The deal", false),
                ("kind", "string", "call, meeting or note", true),
                ("notes", "string", "What happened", true),
            ],
        }],
    },
];
