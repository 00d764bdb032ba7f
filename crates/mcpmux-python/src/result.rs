//! Tool results across the border: the library's [`mcpmux::ToolResult`] as the Python
//! `ToolResult` (content blocks, `is_error`, structured content, the text and untrusted
//! renderings), and what a Python tool may return read back into one. Knows nothing of hubs.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
use serde_json::Value;

use crate::convert;

/// The outcome of a tool call that reached the tool. `is_error` means the tool failed and the
/// model should see it; a call that failed before (or without) the tool raises instead.
#[pyclass(frozen, module = "mcpmux._mcpmux", name = "ToolResult")]
pub(crate) struct ToolResult {
    pub(crate) inner: mcpmux::ToolResult,
    /// The exposed name of the tool that answered (the untrusted rendering names it).
    pub(crate) tool: String,
}

#[pymethods]
impl ToolResult {
    /// Whether the tool reported failure (`isError`).
    #[getter]
    fn is_error(&self) -> bool {
        self.inner.is_error
    }

    /// The exposed name of the tool that answered.
    #[getter]
    fn tool(&self) -> &str {
        &self.tool
    }

    /// The content blocks as MCP dicts (`{"type": "text", "text": ...}`, `image`, `audio`,
    /// `resource`, `resource_link`; any other block as sent).
    #[getter]
    fn content<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let list = PyList::empty(py);
        for block in &self.inner.content {
            list.append(convert::serialized(py, block)?)?;
        }
        Ok(list.into_any())
    }

    /// `structuredContent`, when the tool gave one.
    #[getter]
    fn structured_content<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match &self.inner.structured_content {
            Some(value) => convert::to_py(py, value),
            None => Ok(py.None().into_bound(py)),
        }
    }

    /// Where `structuredContent` does not match the tool's output schema.
    #[getter]
    fn output_problems(&self) -> Vec<String> {
        self.inner.output_problems.clone()
    }

    /// The whole result as plain text: blocks joined by blank lines (images and audio as a
    /// one-line note), structured content as JSON when there are no blocks.
    #[getter]
    fn text(&self) -> String {
        self.inner.to_text()
    }

    /// The text wrapped as untrusted data for a model: delimiters with a fresh nonce that the
    /// tool's text cannot close, naming the tool.
    fn render_untrusted(&self) -> String {
        mcpmux::render_untrusted(&self.inner, &self.tool)
    }

    /// The result as the MCP `CallToolResult` dict (`content`, `structuredContent`, `isError`).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        convert::serialized(py, &self.inner)
    }

    fn __repr__(&self) -> String {
        let mut text = self.inner.to_text();
        if text.len() > 60 {
            let mut cut = 60;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
            text.push('…');
        }
        format!(
            "ToolResult(tool={:?}, is_error={}, text={:?})",
            self.tool,
            if self.inner.is_error { "True" } else { "False" },
            text
        )
    }
}

/// Text from `source` wrapped as untrusted data for a model.
#[pyfunction]
pub(crate) fn render_untrusted_text(source: &str, text: &str) -> String {
    mcpmux::wrap_untrusted(source, text)
}

/// What a Python tool returned, as a `ToolResult` named `tool` (for tests and for harnesses
/// that build results themselves).
#[pyfunction]
#[pyo3(signature = (value, tool = "builtin"))]
pub(crate) fn tool_result(value: &Bound<'_, PyAny>, tool: &str) -> PyResult<ToolResult> {
    Ok(ToolResult {
        inner: from_python(value)?,
        tool: tool.to_owned(),
    })
}

/// What a Python tool may return, read as a result: a `ToolResult`; a `str` (one text block);
/// an MCP `CallToolResult` dict (with `content`); a list of content-block dicts; or any other
/// JSON value (as JSON text, an object also as `structuredContent`).
pub(crate) fn from_python(value: &Bound<'_, PyAny>) -> PyResult<mcpmux::ToolResult> {
    if let Ok(result) = value.cast::<ToolResult>() {
        return Ok(result.get().inner.clone());
    }
    if let Ok(text) = value.cast::<PyString>() {
        return Ok(mcpmux::ToolResult::text(text.to_str()?));
    }
    let json = convert::to_json(value)?;
    let is_result =
        value.is_instance_of::<PyDict>() && json.get("content").is_some_and(Value::is_array);
    if is_result {
        return Ok(mcpmux::ToolResult::from_json(json));
    }
    if let Value::Array(blocks) = &json
        && !blocks.is_empty()
        && blocks
            .iter()
            .all(|b| b.get("type").is_some_and(Value::is_string))
    {
        return Ok(mcpmux::ToolResult::from_json(
            serde_json::json!({ "content": json }),
        ));
    }
    Ok(mcpmux::IntoToolResult::into_tool_result(json))
}
