//! The second half of the `--many-tools` catalog's services (data only; see `many/mod.rs`).

use super::{Domain, Entity, Extra, LIMIT};

/// Payments, search, files, weather, translation, maps, chat, CI, monitoring, notes.
pub(super) const DOMAINS: &[Domain] = &[
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
