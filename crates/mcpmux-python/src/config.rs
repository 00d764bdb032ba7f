//! What `Hub.from_config` reads beyond the servers (the CLI's config, read by the library's own
//! loader — no second parser): which files (`config_files`, `home`, `project_dir`, trust) and
//! which other tools' dialects (`import=[...]`, as `--import`), and the tool cache (folder and
//! maximum age). Knows nothing of hubs.

use std::path::PathBuf;
use std::time::Duration;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use mcpmux::HubOptions;
use mcpmux::config::{Dialect, LoadOptions};

use crate::errors::new_error;

fn item<'py>(options: &Bound<'py, PyDict>, key: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
    Ok(options.get_item(key)?.filter(|v| !v.is_none()))
}

/// The config files to read (`use_config`), as the CLI reads them; `None` for inline servers only.
pub(crate) fn load_options(options: &Bound<'_, PyDict>) -> PyResult<Option<LoadOptions>> {
    let use_config = item(options, "use_config")?.map_or(Ok(false), |v| v.extract())?;
    if !use_config {
        return Ok(None);
    }
    let files: Vec<PathBuf> =
        item(options, "config_files")?.map_or(Ok(Vec::new()), |v| v.extract())?;
    let mut load = LoadOptions::from_env(files);
    if let Some(home) = item(options, "home")? {
        load.home = Some(home.extract()?);
    }
    if let Some(dir) = item(options, "project_dir")? {
        load.project_dir = dir.extract()?;
    }
    let names: Vec<String> = item(options, "import")?.map_or(Ok(Vec::new()), |v| v.extract())?;
    for name in names {
        let dialects = Dialect::import_name(&name).ok_or_else(|| {
            new_error(
                "ConfigError",
                "config",
                format!(
                    "import: unknown name {name:?}: expected one of {}",
                    Dialect::import_names()
                ),
            )
        })?;
        load.import.extend(dialects);
    }
    if item(options, "trust_project")?.map_or(Ok(false), |v| v.extract())? {
        load = load.with_approver(|_| true);
    }
    Ok(Some(load))
}

/// The tool cache: `tool_cache` is `None` (the default folder, none when ephemeral), `False`
/// (none), `True` (the default folder) or a folder; `tool_cache_max_age` in seconds.
#[derive(Default)]
pub(crate) struct CacheOptions {
    folder: Option<Option<PathBuf>>,
    max_age: Option<Duration>,
}

impl CacheOptions {
    pub(crate) fn read(options: &Bound<'_, PyDict>) -> PyResult<Self> {
        let folder = match item(options, "tool_cache")? {
            None => None,
            Some(v) => match v.extract::<bool>() {
                Ok(false) => Some(None),
                Ok(true) => Some(HubOptions::default().tool_cache),
                Err(_) => Some(Some(v.extract::<PathBuf>().map_err(|_| {
                    PyTypeError::new_err("tool_cache must be a folder, True or False")
                })?)),
            },
        };
        let max_age = item(options, "tool_cache_max_age")?
            .map(|v| {
                Duration::try_from_secs_f64(v.extract()?)
                    .map_err(|e| PyValueError::new_err(format!("tool_cache_max_age: {e}")))
            })
            .transpose()?;
        Ok(CacheOptions { folder, max_age })
    }

    pub(crate) fn apply(self, mut options: HubOptions) -> HubOptions {
        if let Some(folder) = self.folder {
            options.tool_cache = folder;
        }
        if let Some(age) = self.max_age {
            options.tool_cache_max_age = age;
        }
        options
    }
}
