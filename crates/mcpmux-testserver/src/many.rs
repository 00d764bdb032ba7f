//! `--many-tools N`: N more tools of a realistic, varied catalog (issues and pull requests,
//! calendar, email, databases, cloud storage, tickets, CRM, payments, web search, files,
//! weather, translation, maps, chat, CI, monitoring, notes), for tool-search and catalog-size
//! tests and benches. Deterministic: the same N gives the same tools in the same order. Each
//! answers with its name and arguments; none does what it says. Knows nothing of transports.

use std::sync::Arc;

use rmcp::{
    handler::server::router::tool::{ToolRoute, ToolRouter},
    model::{CallToolResult, ContentBlock, JsonObject, Tool},
};
use serde_json::{Map, Value, json};

use crate::server::TestServer;

/// A parameter: name, JSON type (`string`, `integer`, `boolean`, `array` of strings), what it
/// is, whether it is required.
type Param = (&'static str, &'static str, &'static str, bool);

/// A thing a service keeps, with the usual create/get/list/update/delete/search tools.
struct Entity {
    name: &'static str,
    plural: &'static str,
    /// What one is, for descriptions ("an issue (a bug report or task) in a repository").
    what: &'static str,
    /// Parameters every tool of the entity takes (the repository, the calendar …).
    scope: &'static [Param],
    /// Its fields, for create and update.
    fields: &'static [Param],
    /// What a list can be filtered by.
    filters: &'static [Param],
}

/// A tool that is not one of the six entity verbs.
struct Extra {
    name: &'static str,
    description: &'static str,
    params: &'static [Param],
}

struct Domain {
    service: &'static str,
    product: &'static str,
    entities: &'static [Entity],
    extras: &'static [Extra],
}

const REPO: Param = ("repo", "string", "Repository as owner/name", true);
const LIMIT: Param = ("limit", "integer", "Most results to return (1-100)", false);

const DOMAINS: &[Domain] = &[
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
    Domain {
        service: "payments",
        product: "the payment processor",
        entities: &[
            Entity {
                name: "customer",
                plural: "customers",
                what: "a paying customer with saved payment methods",
                scope: &[],
                fields: &[
                    ("email", "string", "Billing email", true),
                    ("name", "string", "Full name", false),
                ],
                filters: &[("email", "string", "Billing email", false)],
            },
            Entity {
                name: "subscription",
                plural: "subscriptions",
                what: "a recurring subscription to a price plan",
                scope: &[],
                fields: &[
                    ("customer_id", "string", "The customer", true),
                    ("price_id", "string", "The price plan", true),
                    ("trial_days", "integer", "Free trial length", false),
                ],
                filters: &[("status", "string", "active, past_due, canceled", false)],
            },
        ],
        extras: &[
            Extra {
                name: "payments_create_charge",
                description: "Charge a customer's card or payment method an amount in a currency.",
                params: &[
                    ("customer_id", "string", "The customer", true),
                    ("amount", "integer", "Amount in cents", true),
                    ("currency", "string", "ISO currency code", true),
                ],
            },
            Extra {
                name: "payments_refund_charge",
                description: "Refund a charge in full or in part, giving money back to the customer.",
                params: &[
                    ("charge_id", "string", "The charge", true),
                    (
                        "amount",
                        "integer",
                        "Cents to refund (all if omitted)",
                        false,
                    ),
                    (
                        "reason",
                        "string",
                        "duplicate, fraudulent or requested_by_customer",
                        false,
                    ),
                ],
            },
            Extra {
                name: "payments_create_invoice",
                description: "Create and send an invoice for a customer's pending items.",
                params: &[
                    ("customer_id", "string", "The customer", true),
                    ("due_days", "integer", "Days until due", false),
                ],
            },
            Extra {
                name: "payments_get_balance",
                description: "Get the account's available and pending balance per currency.",
                params: &[],
            },
        ],
    },
    Domain {
        service: "websearch",
        product: "the web",
        entities: &[],
        extras: &[
            Extra {
                name: "websearch_search_web",
                description: "Search the web and return titles, URLs and snippets of the top results.",
                params: &[
                    ("query", "string", "Search terms", true),
                    ("count", "integer", "Number of results", false),
                    ("freshness", "string", "day, week or month", false),
                ],
            },
            Extra {
                name: "websearch_search_news",
                description: "Search recent news articles about a topic.",
                params: &[
                    ("query", "string", "Topic", true),
                    ("count", "integer", "Number of articles", false),
                ],
            },
            Extra {
                name: "websearch_fetch_page",
                description: "Fetch a web page by URL and return its readable text as Markdown.",
                params: &[
                    ("url", "string", "Page URL", true),
                    ("max_length", "integer", "Most characters returned", false),
                ],
            },
            Extra {
                name: "websearch_search_images",
                description: "Search for images on the web and return image URLs with sizes.",
                params: &[
                    ("query", "string", "What to look for", true),
                    ("count", "integer", "Number of images", false),
                ],
            },
        ],
    },
    Domain {
        service: "drive",
        product: "the shared drive",
        entities: &[Entity {
            name: "folder",
            plural: "folders",
            what: "a folder in the shared drive",
            scope: &[],
            fields: &[
                ("name", "string", "Folder name", true),
                ("parent_id", "string", "Parent folder", false),
            ],
            filters: &[("parent_id", "string", "Only folders inside this one", false)],
        }],
        extras: &[
            Extra {
                name: "drive_share_file",
                description: "Share a drive file or folder with people, as viewer, commenter or editor.",
                params: &[
                    ("file_id", "string", "The file or folder", true),
                    ("emails", "array", "People to share with", true),
                    ("role", "string", "viewer, commenter or editor", true),
                ],
            },
            Extra {
                name: "drive_export_document",
                description: "Export a document from the drive as PDF, DOCX or plain text.",
                params: &[
                    ("file_id", "string", "The document", true),
                    ("format", "string", "pdf, docx or txt", true),
                ],
            },
            Extra {
                name: "drive_search_files",
                description: "Search the shared drive for documents, spreadsheets and files by name or content.",
                params: &[
                    ("query", "string", "Words to find", true),
                    ("mime_type", "string", "Only this type", false),
                ],
            },
        ],
    },
    Domain {
        service: "weather",
        product: "the weather service",
        entities: &[],
        extras: &[
            Extra {
                name: "weather_get_current_conditions",
                description: "Get the current weather conditions at a place: temperature, wind, humidity, precipitation.",
                params: &[
                    (
                        "location",
                        "string",
                        "City name or latitude,longitude",
                        true,
                    ),
                    ("units", "string", "metric or imperial", false),
                ],
            },
            Extra {
                name: "weather_get_forecast",
                description: "Get the daily weather forecast for the next days at a place.",
                params: &[
                    (
                        "location",
                        "string",
                        "City name or latitude,longitude",
                        true,
                    ),
                    ("days", "integer", "How many days (1-14)", false),
                ],
            },
            Extra {
                name: "weather_get_alerts",
                description: "Get active severe weather alerts (storms, floods, heat) for a region.",
                params: &[("region", "string", "Country or state code", true)],
            },
            Extra {
                name: "weather_get_air_quality",
                description: "Get the air quality index and pollutant levels at a place.",
                params: &[(
                    "location",
                    "string",
                    "City name or latitude,longitude",
                    true,
                )],
            },
        ],
    },
    Domain {
        service: "translate",
        product: "the translation service",
        entities: &[Entity {
            name: "glossary",
            plural: "glossaries",
            what: "a glossary of fixed term translations",
            scope: &[],
            fields: &[
                ("name", "string", "Glossary name", true),
                ("entries", "array", "source=target pairs", true),
            ],
            filters: &[],
        }],
        extras: &[
            Extra {
                name: "translate_text",
                description: "Translate text from one language into another.",
                params: &[
                    ("text", "string", "Text to translate", true),
                    (
                        "target_language",
                        "string",
                        "Language code to translate into, e.g. de",
                        true,
                    ),
                    (
                        "source_language",
                        "string",
                        "Language code of the text (detected if omitted)",
                        false,
                    ),
                ],
            },
            Extra {
                name: "translate_detect_language",
                description: "Detect which language a piece of text is written in.",
                params: &[("text", "string", "The text", true)],
            },
            Extra {
                name: "translate_list_languages",
                description: "List the languages the translation service supports.",
                params: &[],
            },
        ],
    },
    Domain {
        service: "maps",
        product: "the maps service",
        entities: &[],
        extras: &[
            Extra {
                name: "maps_geocode_address",
                description: "Turn a street address into latitude and longitude coordinates.",
                params: &[("address", "string", "Street address", true)],
            },
            Extra {
                name: "maps_reverse_geocode",
                description: "Find the street address at latitude and longitude coordinates.",
                params: &[
                    ("latitude", "string", "Latitude", true),
                    ("longitude", "string", "Longitude", true),
                ],
            },
            Extra {
                name: "maps_get_directions",
                description: "Get driving, walking, cycling or transit directions and travel time between two places.",
                params: &[
                    ("origin", "string", "Start address or place", true),
                    ("destination", "string", "End address or place", true),
                    (
                        "mode",
                        "string",
                        "driving, walking, bicycling or transit",
                        false,
                    ),
                ],
            },
            Extra {
                name: "maps_search_places",
                description: "Search for places near a location, such as restaurants, pharmacies or petrol stations.",
                params: &[
                    ("query", "string", "What to look for", true),
                    ("near", "string", "Address or coordinates", false),
                    ("radius_meters", "integer", "Search radius", false),
                ],
            },
            Extra {
                name: "maps_distance_matrix",
                description: "Compute travel distances and durations between many origins and destinations.",
                params: &[
                    ("origins", "array", "Start places", true),
                    ("destinations", "array", "End places", true),
                ],
            },
        ],
    },
    Domain {
        service: "chat",
        product: "the team chat",
        entities: &[Entity {
            name: "channel",
            plural: "channels",
            what: "a team chat channel",
            scope: &[],
            fields: &[
                ("name", "string", "Channel name", true),
                ("private", "boolean", "Invite only", false),
                ("topic", "string", "Channel topic", false),
            ],
            filters: &[(
                "include_archived",
                "boolean",
                "Also archived channels",
                false,
            )],
        }],
        extras: &[
            Extra {
                name: "chat_post_message",
                description: "Post a message to a team chat channel or thread.",
                params: &[
                    ("channel", "string", "Channel name or id", true),
                    ("text", "string", "Message text", true),
                    ("thread_ts", "string", "Reply in this thread", false),
                ],
            },
            Extra {
                name: "chat_read_history",
                description: "Read the recent messages of a chat channel.",
                params: &[("channel", "string", "Channel name or id", true), LIMIT],
            },
            Extra {
                name: "chat_add_reaction",
                description: "Add an emoji reaction to a chat message.",
                params: &[
                    ("channel", "string", "Channel", true),
                    ("timestamp", "string", "Message timestamp", true),
                    ("emoji", "string", "Emoji name", true),
                ],
            },
            Extra {
                name: "chat_set_status",
                description: "Set the user's chat status text and emoji, e.g. away or in a meeting.",
                params: &[
                    ("text", "string", "Status text", true),
                    ("emoji", "string", "Status emoji", false),
                ],
            },
        ],
    },
    Domain {
        service: "ci",
        product: "continuous integration",
        entities: &[Entity {
            name: "pipeline",
            plural: "pipelines",
            what: "a CI pipeline definition (build and test workflow)",
            scope: &[("project", "string", "Project path", true)],
            fields: &[
                ("name", "string", "Pipeline name", true),
                ("config", "string", "YAML definition", true),
            ],
            filters: &[],
        }],
        extras: &[
            Extra {
                name: "ci_trigger_build",
                description: "Start a CI build and test run for a branch or commit.",
                params: &[
                    ("project", "string", "Project path", true),
                    ("branch", "string", "Branch to build", true),
                ],
            },
            Extra {
                name: "ci_get_build_logs",
                description: "Get the log output of a CI build job, to see why it failed.",
                params: &[
                    ("project", "string", "Project path", true),
                    ("build_id", "string", "The build", true),
                    ("tail", "integer", "Only the last lines", false),
                ],
            },
            Extra {
                name: "ci_cancel_build",
                description: "Cancel a running CI build.",
                params: &[
                    ("project", "string", "Project path", true),
                    ("build_id", "string", "The build", true),
                ],
            },
            Extra {
                name: "ci_deploy_release",
                description: "Deploy a built release to an environment such as staging or production.",
                params: &[
                    ("project", "string", "Project path", true),
                    ("version", "string", "Release version", true),
                    ("environment", "string", "staging or production", true),
                ],
            },
        ],
    },
    Domain {
        service: "monitoring",
        product: "monitoring",
        entities: &[Entity {
            name: "alert_rule",
            plural: "alert rules",
            what: "an alert rule that pages someone when a metric crosses a threshold",
            scope: &[],
            fields: &[
                ("metric", "string", "Metric name", true),
                ("threshold", "integer", "Value that triggers it", true),
                ("channel", "string", "Where to notify", false),
            ],
            filters: &[("metric", "string", "Metric name", false)],
        }],
        extras: &[
            Extra {
                name: "monitoring_query_metrics",
                description: "Query a time series metric (CPU, memory, latency, error rate) over a time range.",
                params: &[
                    ("query", "string", "Metric query expression", true),
                    ("start", "string", "Range start", true),
                    ("end", "string", "Range end", false),
                    ("step_seconds", "integer", "Resolution", false),
                ],
            },
            Extra {
                name: "monitoring_search_logs",
                description: "Search application logs by text and time range, e.g. for errors and exceptions.",
                params: &[
                    ("query", "string", "Log search query", true),
                    ("since", "string", "How far back, e.g. 1h", false),
                    LIMIT,
                ],
            },
            Extra {
                name: "monitoring_list_incidents",
                description: "List open incidents and outages with their severity and who is on call.",
                params: &[("severity", "string", "Only this severity", false)],
            },
            Extra {
                name: "monitoring_acknowledge_incident",
                description: "Acknowledge an incident page so it stops escalating.",
                params: &[("incident_id", "string", "The incident", true)],
            },
        ],
    },
    Domain {
        service: "notes",
        product: "the notes app",
        entities: &[
            Entity {
                name: "note",
                plural: "notes",
                what: "a note (a page of text) in a notebook",
                scope: &[("notebook", "string", "Notebook name", false)],
                fields: &[
                    ("title", "string", "Note title", true),
                    ("content", "string", "Markdown content", true),
                    ("tags", "array", "Tags", false),
                ],
                filters: &[("tag", "string", "Only notes with this tag", false)],
            },
            Entity {
                name: "task",
                plural: "tasks",
                what: "a to-do task with a due date",
                scope: &[("project", "string", "Project or list name", false)],
                fields: &[
                    ("title", "string", "What to do", true),
                    ("due", "string", "Due date", false),
                    ("done", "boolean", "Completed", false),
                ],
                filters: &[("done", "boolean", "Completed or not", false)],
            },
        ],
        extras: &[],
    },
];

/// Every tool of the catalog, domain by domain: `(name, description, input schema)`.
fn catalog() -> Vec<(String, String, Value)> {
    let mut tools = Vec::new();
    for domain in DOMAINS {
        let mut own = Vec::new();
        for extra in domain.extras {
            own.push((
                extra.name.to_string(),
                extra.description.to_string(),
                schema(extra.params),
            ));
        }
        for entity in domain.entities {
            own.extend(entity_tools(domain, entity));
        }
        tools.push(own);
    }
    // Round-robin over the domains, so any N is a varied catalog.
    let mut out = Vec::new();
    let longest = tools.iter().map(Vec::len).max().unwrap_or(0);
    for i in 0..longest {
        for own in &tools {
            if let Some(tool) = own.get(i) {
                out.push(tool.clone());
            }
        }
    }
    out
}

fn entity_tools(domain: &Domain, e: &Entity) -> Vec<(String, String, Value)> {
    let (service, product) = (domain.service, domain.product);
    let id = [(
        "id",
        "string",
        "Its id, as returned when it was created or listed",
        true,
    )];
    let optional: Vec<Param> = e
        .fields
        .iter()
        .map(|&(n, t, d, _)| (n, t, d, false))
        .collect();
    let cat = |parts: &[&[Param]]| -> Vec<Param> { parts.concat() };
    vec![
        (
            format!("{service}_create_{}", e.name),
            format!("Create {} in {product}.", e.what),
            schema(&cat(&[e.scope, e.fields])),
        ),
        (
            format!("{service}_get_{}", e.name),
            format!(
                "Get one {} from {product} by its id, with all its fields.",
                e.name.replace('_', " ")
            ),
            schema(&cat(&[e.scope, &id])),
        ),
        (
            format!("{service}_list_{}", plural_name(e)),
            format!(
                "List the {} in {product}, newest first, one page at a time.",
                e.plural
            ),
            schema(&cat(&[
                e.scope,
                e.filters,
                &[
                    LIMIT,
                    (
                        "cursor",
                        "string",
                        "Page cursor from the previous answer",
                        false,
                    ),
                ],
            ])),
        ),
        (
            format!("{service}_update_{}", e.name),
            format!(
                "Change fields of an existing {} in {product}; fields not given stay as they are.",
                e.name.replace('_', " ")
            ),
            schema(&cat(&[e.scope, &id, &optional])),
        ),
        (
            format!("{service}_delete_{}", e.name),
            format!("Delete {} from {product} permanently.", e.what),
            schema(&cat(&[e.scope, &id])),
        ),
        (
            format!("{service}_search_{}", plural_name(e)),
            format!("Search {} in {product} by words they contain.", e.plural),
            schema(&cat(&[
                e.scope,
                &[("query", "string", "Words to look for", true), LIMIT],
            ])),
        ),
    ]
}

fn plural_name(e: &Entity) -> String {
    e.plural.replace(' ', "_")
}

fn schema(params: &[Param]) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for &(name, kind, description, needed) in params {
        let property = if kind == "array" {
            json!({"type": "array", "items": {"type": "string"}, "description": description})
        } else {
            json!({"type": kind, "description": description})
        };
        properties.insert(name.to_string(), property);
        if needed && !required.contains(&name) {
            required.push(name);
        }
    }
    json!({"type": "object", "properties": properties, "required": required})
}

/// Workspaces the catalog is repeated for when N is larger than it.
const TENANTS: &[&str] = &["acme", "globex", "initech", "umbrella", "hooli", "stark"];

/// The first `count` tools: the catalog, then again per tenant (`acme_github_create_issue`),
/// then numbered rounds.
pub fn tools(count: usize) -> Vec<Tool> {
    let base = catalog();
    let mut out = Vec::with_capacity(count);
    let mut round = 0usize;
    while out.len() < count && !base.is_empty() {
        for (name, description, schema) in &base {
            if out.len() == count {
                break;
            }
            let (name, description) = match round {
                0 => (name.clone(), description.clone()),
                r => {
                    let tenant = match TENANTS.get(r - 1) {
                        Some(t) => t.to_string(),
                        None => format!("tenant{r}"),
                    };
                    (
                        format!("{tenant}_{name}"),
                        format!("{description} (In the {tenant} workspace.)"),
                    )
                }
            };
            let schema = match schema {
                Value::Object(map) => map.clone(),
                _ => JsonObject::new(),
            };
            out.push(Tool::new(name, description, Arc::new(schema)));
        }
        round += 1;
    }
    out
}

/// Adds the first `count` catalog tools to `router`.
pub fn add_tools(router: &mut ToolRouter<TestServer>, count: usize) {
    for tool in tools(count) {
        let name = tool.name.to_string();
        router.add_route(ToolRoute::new_dyn(tool, move |context| {
            let answer = json!({"tool": name, "arguments": context.arguments.clone()});
            Box::pin(async move {
                Ok(CallToolResult::success(vec![ContentBlock::text(answer.to_string())]).into())
            })
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn any_count_gives_that_many_distinct_tools_deterministically() {
        let base = catalog().len();
        assert!(base >= 150, "{base}");
        for count in [0, 1, 17, base, base + 1, 5 * base] {
            let tools = tools(count);
            assert_eq!(tools.len(), count);
            let names: HashSet<_> = tools.iter().map(|t| t.name.to_string()).collect();
            assert_eq!(names.len(), count, "names repeat at {count}");
            assert_eq!(tools, super::tools(count));
        }
    }

    #[test]
    fn a_small_catalog_spans_many_domains_and_every_tool_has_an_object_schema() {
        let services: HashSet<_> = tools(17)
            .iter()
            .map(|t| t.name.split('_').next().unwrap_or_default().to_string())
            .collect();
        assert_eq!(services.len(), 17);
        for tool in tools(400) {
            assert_eq!(
                tool.input_schema.get("type"),
                Some(&json!("object")),
                "{}",
                tool.name
            );
            assert!(tool.description.as_deref().is_some_and(|d| d.len() > 20));
        }
    }
}
