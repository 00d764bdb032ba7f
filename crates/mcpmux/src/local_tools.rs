//! Tool sources: MCP servers, built-in tools and custom handlers all list tools and answer
//! calls through one trait, [`ToolSource`], so a harness sees one [`Tool`] type and one call
//! path.
//!
//! A built-in tool is a plain async Rust function registered with a name and a description;
//! its JSON schema is derived by `schemars` from the argument type, and arguments are
//! deserialized into that type. [`LocalTools`] resolves local tools by name, a custom
//! handler overriding a built-in of the same name; the registry's list is merged by
//! [`crate::catalog::merge`]. Knows nothing of connections.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::call_options::CallOptions;
use crate::catalog::merge::{Dropped, Merged, SourceKind, SourcedTool, ToolOrigin, merge};
use crate::catalog::{BUILTIN_SOURCE, Tool, ToolAnnotations};
use crate::error::{Error, Result};
use crate::result::{IntoToolResult, ToolResult};

/// Whether a source can take calls now.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Health {
    /// Ready for calls.
    Ready,
    /// Takes calls, but something is wrong (slow, partially failing).
    Degraded {
        /// What is wrong.
        reason: String,
    },
    /// Cannot take calls now.
    Unavailable {
        /// Why.
        reason: String,
    },
}

/// Anything that lists tools and answers calls: an MCP server, the built-in tools, a custom
/// handler. Object-safe: the hub holds `Arc<dyn ToolSource>`.
pub trait ToolSource: Send + Sync {
    /// The source's name (server name, handler name, `builtin`).
    fn name(&self) -> &str;

    /// What kind of source it is.
    fn kind(&self) -> SourceKind;

    /// Its tools now. `Tool::name` is the name the tool is exposed (and called) as.
    fn tools(&self) -> BoxFuture<'_, Result<Vec<Tool>>>;

    /// Calls the tool exposed as `name`. A tool that fails answers `Ok` with `is_error`.
    fn call<'a>(
        &'a self,
        name: &'a str,
        arguments: Value,
        options: &'a CallOptions,
    ) -> BoxFuture<'a, Result<ToolResult>>;

    /// Whether it can take calls now.
    fn health(&self) -> Health {
        Health::Ready
    }
}

/// The argument type of a built-in tool that takes none.
#[derive(Debug, Clone, Copy, Default, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

type HandlerFn =
    dyn Fn(Value) -> std::result::Result<BoxFuture<'static, ToolResult>, String> + Send + Sync;

/// A built-in tool: a plain async function with a name, a description and a derived schema.
#[derive(Clone)]
pub struct Builtin {
    tool: Tool,
    handler: Arc<HandlerFn>,
}

impl fmt::Debug for Builtin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Builtin").field("tool", &self.tool).finish()
    }
}

/// The JSON schema of `T` as a tool's input schema: schemars' 2020-12 output without the
/// type's title; a unit type becomes an object without properties.
pub fn input_schema_for<T: JsonSchema>() -> Value {
    let mut schema = schemars::schema_for!(T).to_value();
    if let Some(map) = schema.as_object_mut() {
        map.remove("title");
        if map.get("type") == Some(&Value::String("null".into())) {
            map.insert("type".into(), "object".into());
            map.insert("properties".into(), Value::Object(Default::default()));
            map.insert("additionalProperties".into(), Value::Bool(false));
        }
    }
    schema
}

impl Builtin {
    /// Registers `f` as the tool `name`: its schema is derived from `T`, its arguments are
    /// deserialized into `T`. The function returns a [`ToolResult`], a `String`, a JSON value,
    /// a [`Json`](crate::Json) or a `Result` of those (an `Err` is a tool error the model sees).
    pub fn new<T, F, Fut, R>(name: impl Into<String>, description: impl Into<String>, f: F) -> Self
    where
        T: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(T) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoToolResult + 'static,
    {
        let schema = input_schema_for::<T>();
        let handler = move |arguments: Value| {
            let arguments = match arguments {
                Value::Null => Value::Object(Default::default()),
                other => other,
            };
            // A unit-like argument type reads from null; give it null for "no arguments".
            let parsed = serde_json::from_value::<T>(arguments.clone()).or_else(|e| {
                if arguments.as_object().is_some_and(|m| m.is_empty()) {
                    serde_json::from_value::<T>(Value::Null).map_err(|_| e)
                } else {
                    Err(e)
                }
            });
            match parsed {
                Ok(args) => {
                    let fut = f(args);
                    let boxed: BoxFuture<'static, ToolResult> =
                        Box::pin(async move { fut.await.into_tool_result() });
                    Ok(boxed)
                }
                Err(e) => Err(e.to_string()),
            }
        };
        Builtin {
            tool: Tool::local(name, schema).with_description(description),
            handler: Arc::new(handler),
        }
    }

    /// The tool as listed.
    pub fn tool(&self) -> &Tool {
        &self.tool
    }

    /// Builder-style: it only reads (`readOnlyHint: true`).
    pub fn read_only(mut self) -> Self {
        self.tool.annotations.read_only_hint = Some(true);
        self
    }

    /// Builder-style: it may destroy data (`destructiveHint: true`).
    pub fn destructive(mut self) -> Self {
        self.tool.annotations.read_only_hint = Some(false);
        self.tool.annotations.destructive_hint = Some(true);
        self
    }

    /// Builder-style: whether it reaches the open world (`openWorldHint`).
    pub fn open_world(mut self, open: bool) -> Self {
        self.tool.annotations.open_world_hint = Some(open);
        self
    }

    /// Builder-style: set all the hints at once.
    pub fn with_annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.tool.annotations = annotations;
        self
    }

    /// Builder-style: set the human title.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.tool.title = Some(title.into());
        self
    }

    /// Builder-style: list `schema` instead of the one derived from the argument type, for a
    /// tool whose arguments are described at run time (a function of another language taking
    /// `serde_json::Value`). The hub validates every call against it before the function runs.
    pub fn with_input_schema(mut self, schema: Value) -> Self {
        self.tool.input_schema = schema;
        self
    }

    /// Calls it: arguments that do not fit the type are `InvalidArguments`; the deadline and
    /// cancellation of `options` apply.
    pub async fn call(&self, arguments: Value, options: &CallOptions) -> Result<ToolResult> {
        let fut = (self.handler)(arguments).map_err(|message| Error::InvalidArguments {
            tool: self.tool.name.clone(),
            message,
        })?;
        options
            .run_local(&self.tool.server, &self.tool.name, fut)
            .await
    }
}

/// A local tool's deadline and cancellation, here beside the tools that need them (the call
/// options know nothing of errors).
impl CallOptions {
    /// Runs `call`, a local tool `name` of `source` (a [`ToolSource`](crate::ToolSource) of
    /// the harness's own), under this call's deadline and cancellation, as the hub runs a
    /// server's: [`Error::Timeout`] when the deadline passes, [`Error::Cancelled`] when the
    /// token is cancelled, the future dropped in both cases.
    pub async fn run_local<T>(
        &self,
        source: &str,
        name: &str,
        call: impl std::future::Future<Output = T>,
    ) -> Result<T> {
        let timed = async {
            match self.timeout {
                Some(after) => {
                    tokio::time::timeout(after, call)
                        .await
                        .map_err(|_| Error::Timeout {
                            server: source.to_string(),
                            what: format!("tools/call {name}"),
                            after,
                        })
                }
                None => Ok(call.await),
            }
        };
        match &self.cancel {
            Some(token) => tokio::select! {
                _ = token.cancelled() => Err(Error::Cancelled(format!("call to `{name}` cancelled"))),
                result = timed => result,
            },
            None => timed.await,
        }
    }
}

/// How a registry resolved a name.
#[derive(Clone)]
pub enum Resolved {
    /// A built-in tool.
    Builtin(Arc<Builtin>),
    /// A tool of a custom handler.
    Custom {
        /// The handler.
        source: Arc<dyn ToolSource>,
        /// The tool as it listed it (boxed: a tool record is large beside an `Arc`).
        tool: Box<Tool>,
    },
}

impl Resolved {
    /// The tool as listed.
    pub fn tool(&self) -> &Tool {
        match self {
            Resolved::Builtin(b) => b.tool(),
            Resolved::Custom { tool, .. } => tool,
        }
    }

    /// Where it comes from.
    pub fn origin(&self) -> ToolOrigin {
        match self {
            Resolved::Builtin(_) => ToolOrigin::Builtin,
            Resolved::Custom { source, .. } => ToolOrigin::Custom {
                source: source.name().to_string(),
            },
        }
    }

    /// Calls it.
    pub async fn call(&self, arguments: Value, options: &CallOptions) -> Result<ToolResult> {
        match self {
            Resolved::Builtin(b) => b.call(arguments, options).await,
            Resolved::Custom { source, tool } => source.call(&tool.name, arguments, options).await,
        }
    }
}

impl fmt::Debug for Resolved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Resolved")
            .field("tool", &self.tool().name)
            .field("origin", &self.origin())
            .finish()
    }
}

/// The harness's local tools: built-ins and custom handlers, resolved by name, custom
/// overriding built-in. Itself a [`ToolSource`] named `builtin`.
#[derive(Default)]
pub struct LocalTools {
    builtins: Vec<Arc<Builtin>>,
    sources: Vec<Arc<dyn ToolSource>>,
    /// Tools listed by each custom source at the last refresh.
    listed: Vec<Vec<Tool>>,
    merged: Merged,
    by_name: HashMap<String, usize>,
}

impl fmt::Debug for LocalTools {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self
            .merged
            .tools
            .iter()
            .map(|t| t.tool.name.as_str())
            .collect();
        f.debug_struct("LocalTools")
            .field("tools", &names)
            .finish_non_exhaustive()
    }
}

impl LocalTools {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a built-in tool; a later built-in of the same name replaces an earlier one.
    pub fn register(&mut self, builtin: Builtin) -> &mut Self {
        self.builtins.push(Arc::new(builtin));
        self.rebuild();
        self
    }

    /// Builder-style [`LocalTools::register`].
    pub fn with(mut self, builtin: Builtin) -> Self {
        self.register(builtin);
        self
    }

    /// Adds a custom handler; its tools are listed at the next [`LocalTools::refresh`]
    /// and override built-ins of the same name.
    pub fn register_source(&mut self, source: Arc<dyn ToolSource>) -> &mut Self {
        self.sources.push(source);
        self.listed.push(Vec::new());
        self
    }

    /// Lists every custom handler's tools again; a handler that fails keeps no tools, and its
    /// error is returned with its name.
    pub async fn refresh(&mut self) -> Vec<(String, Error)> {
        let lists = futures::future::join_all(self.sources.iter().map(|s| s.tools())).await;
        let mut errors = Vec::new();
        for (i, list) in lists.into_iter().enumerate() {
            self.listed[i] = match list {
                Ok(tools) => tools,
                Err(e) => {
                    let name = self.sources[i].name().to_string();
                    tracing::warn!(source = %name, "custom handler failed to list tools: {e}");
                    errors.push((name, e));
                    Vec::new()
                }
            };
        }
        self.rebuild();
        errors
    }

    fn rebuild(&mut self) {
        // Later built-ins replace earlier ones of the same name: give them first.
        let builtins = self.builtins.iter().rev().map(|b| SourcedTool {
            tool: b.tool().clone(),
            origin: ToolOrigin::Builtin,
        });
        let custom = self
            .sources
            .iter()
            .zip(&self.listed)
            .flat_map(|(source, tools)| {
                tools.iter().map(move |t| SourcedTool {
                    tool: t.clone(),
                    origin: ToolOrigin::Custom {
                        source: source.name().to_string(),
                    },
                })
            });
        self.merged = merge(custom.chain(builtins));
        self.by_name = self
            .merged
            .tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.tool.name.clone(), i))
            .collect();
    }

    /// Local tools with their origin, sorted by name: what the catalog merges next to MCP tools.
    pub fn entries(&self) -> &[SourcedTool] {
        &self.merged.tools
    }

    /// Local tools, sorted by name.
    pub fn tools(&self) -> Vec<Tool> {
        self.merged.tools.iter().map(|t| t.tool.clone()).collect()
    }

    /// Local tools left out because another local tool took their name.
    pub fn dropped(&self) -> &[Dropped] {
        &self.merged.dropped
    }

    /// The local tool exposed as `name`.
    pub fn resolve(&self, name: &str) -> Option<Resolved> {
        let entry = &self.merged.tools[*self.by_name.get(name)?];
        match &entry.origin {
            ToolOrigin::Builtin => self
                .builtins
                .iter()
                .rev()
                .find(|b| b.tool().name == name)
                .map(|b| Resolved::Builtin(b.clone())),
            ToolOrigin::Custom { source } => {
                self.sources
                    .iter()
                    .find(|s| s.name() == source)
                    .map(|s| Resolved::Custom {
                        source: s.clone(),
                        tool: Box::new(entry.tool.clone()),
                    })
            }
            ToolOrigin::Mcp { .. } => None,
        }
    }
}

impl ToolSource for LocalTools {
    fn name(&self) -> &str {
        BUILTIN_SOURCE
    }

    fn kind(&self) -> SourceKind {
        SourceKind::Builtin
    }

    fn tools(&self) -> BoxFuture<'_, Result<Vec<Tool>>> {
        let tools = LocalTools::tools(self);
        Box::pin(async move { Ok(tools) })
    }

    fn call<'a>(
        &'a self,
        name: &'a str,
        arguments: Value,
        options: &'a CallOptions,
    ) -> BoxFuture<'a, Result<ToolResult>> {
        Box::pin(async move {
            match self.resolve(name) {
                Some(resolved) => resolved.call(arguments, options).await,
                None => Err(Error::UnknownTool {
                    name: name.to_string(),
                    suggestion: None,
                }),
            }
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use crate::result::Json;
    use std::time::Duration;

    use super::*;
    use serde::Deserialize;
    use serde_json::json;
    use tokio_util::sync::CancellationToken;

    #[derive(Deserialize, JsonSchema)]
    struct ReadArgs {
        /// The file to read.
        path: String,
        /// How many lines from the end.
        tail: Option<u32>,
    }

    fn read_tool() -> Builtin {
        Builtin::new("read_file", "Reads a file.", |args: ReadArgs| async move {
            format!("read {} tail {:?}", args.path, args.tail)
        })
        .read_only()
    }

    #[test]
    fn schema_is_derived_from_the_argument_type() {
        let tool = read_tool().tool().clone();
        assert_eq!(tool.name, "read_file");
        assert_eq!(tool.raw_name, "read_file");
        assert_eq!(tool.server, BUILTIN_SOURCE);
        assert_eq!(tool.description.as_deref(), Some("Reads a file."));
        assert_eq!(tool.annotations.read_only_hint, Some(true));
        let schema = &tool.input_schema;
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["required"], json!(["path"]));
        assert_eq!(schema["properties"]["path"]["type"], "string");
        assert_eq!(
            schema["properties"]["path"]["description"],
            "The file to read."
        );
        assert!(schema.get("title").is_none());

        let none = input_schema_for::<NoArgs>();
        assert_eq!(none["type"], "object");
        let unit = input_schema_for::<()>();
        assert_eq!(unit["type"], "object");
        assert_eq!(unit["properties"], json!({}));
    }

    #[tokio::test]
    async fn calls_deserialize_arguments_into_the_type() {
        let tool = read_tool();
        let options = CallOptions::default();
        let result = tool
            .call(json!({"path": "/a", "tail": 3}), &options)
            .await
            .unwrap();
        assert_eq!(result.to_text(), "read /a tail Some(3)");
        let err = tool.call(json!({"tail": 3}), &options).await.unwrap_err();
        assert!(
            matches!(&err, Error::InvalidArguments { tool, message } if tool == "read_file" && message.contains("path")),
            "{err}"
        );

        let none = Builtin::new("ping", "Pings.", |_: NoArgs| async { "pong" });
        assert_eq!(
            none.call(Value::Null, &options).await.unwrap().to_text(),
            "pong"
        );
        let unit = Builtin::new("unit", "Unit.", |_: ()| async { "ok" });
        assert_eq!(
            unit.call(json!({}), &options).await.unwrap().to_text(),
            "ok"
        );
    }

    #[tokio::test]
    async fn errors_become_tool_errors_and_json_becomes_structured() {
        let options = CallOptions::default();
        let failing = Builtin::new("fail", "Fails.", |_: NoArgs| async {
            Err::<String, _>("disk full")
        });
        let result = failing.call(json!({}), &options).await.unwrap();
        assert!(result.is_error);
        assert_eq!(result.to_text(), "disk full");

        let structured = Builtin::new("sum", "Sums.", |_: NoArgs| async {
            Json(json!({"sum": 5}))
        });
        let result = structured.call(json!({}), &options).await.unwrap();
        assert_eq!(result.structured_content, Some(json!({"sum": 5})));
        assert!(!result.is_error);
    }

    #[tokio::test]
    async fn deadline_and_cancellation_apply_to_builtins() {
        let slow = Builtin::new("slow", "Sleeps.", |_: NoArgs| async {
            tokio::time::sleep(Duration::from_secs(30)).await;
            "done"
        });
        let err = slow
            .call(
                json!({}),
                &CallOptions::default().with_timeout(Duration::from_millis(20)),
            )
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Timeout { .. }), "{err}");
        let token = CancellationToken::new();
        let options = CallOptions::default().with_cancel(token.clone());
        let call = slow.call(json!({}), &options);
        token.cancel();
        assert!(matches!(call.await, Err(Error::Cancelled(_))));
    }

    /// A custom handler that wraps "an API" as two tools.
    struct Rest;

    impl ToolSource for Rest {
        fn name(&self) -> &str {
            "rest"
        }
        fn kind(&self) -> SourceKind {
            SourceKind::Custom
        }
        fn tools(&self) -> BoxFuture<'_, Result<Vec<Tool>>> {
            Box::pin(async {
                Ok(vec![
                    Tool::local("read_file", json!({"type": "object"})).with_source("rest"),
                    Tool::local("get_user", json!({"type": "object"})).with_source("rest"),
                ])
            })
        }
        fn call<'a>(
            &'a self,
            name: &'a str,
            _arguments: Value,
            _options: &'a CallOptions,
        ) -> BoxFuture<'a, Result<ToolResult>> {
            Box::pin(async move { Ok(ToolResult::text(format!("rest answered {name}"))) })
        }
    }

    #[tokio::test]
    async fn registry_resolves_custom_over_builtin() {
        let mut registry = LocalTools::new().with(read_tool()).with(Builtin::new(
            "ping",
            "Pings.",
            |_: NoArgs| async { "pong" },
        ));
        assert_eq!(registry.tools().len(), 2);
        registry.register_source(Arc::new(Rest));
        assert!(registry.refresh().await.is_empty());
        let names: Vec<String> = registry.tools().into_iter().map(|t| t.name).collect();
        assert_eq!(names, ["get_user", "ping", "read_file"]);
        assert_eq!(registry.dropped().len(), 1);
        let options = CallOptions::default();
        let read = registry.resolve("read_file").unwrap();
        assert_eq!(
            read.origin(),
            ToolOrigin::Custom {
                source: "rest".into()
            }
        );
        let via_trait = ToolSource::call(&registry, "read_file", json!({}), &options)
            .await
            .unwrap();
        assert_eq!(via_trait.to_text(), "rest answered read_file");
        let ping = ToolSource::call(&registry, "ping", json!({}), &options)
            .await
            .unwrap();
        assert_eq!(ping.to_text(), "pong");
        let missing = ToolSource::call(&registry, "nope", json!({}), &options).await;
        assert!(matches!(missing, Err(Error::UnknownTool { .. })));
    }

    #[test]
    fn a_later_builtin_replaces_an_earlier_one() {
        let registry = LocalTools::new()
            .with(Builtin::new("t", "first", |_: NoArgs| async { "1" }))
            .with(Builtin::new("t", "second", |_: NoArgs| async { "2" }));
        assert_eq!(registry.tools().len(), 1);
        assert_eq!(registry.tools()[0].description.as_deref(), Some("second"));
        let resolved = registry.resolve("t").unwrap();
        assert_eq!(resolved.tool().description.as_deref(), Some("second"));
    }
}
