//! Server text made safe to show on a person's terminal: control characters that a terminal
//! would act on (OSC retitling, CSI screen clears, carriage returns that overwrite a line, C1
//! controls, bidi overrides that reorder what is read) are shown as visible escapes instead.
//! Knows nothing of where the text came from or whether the output is a terminal: the caller
//! decides when to escape.

use std::borrow::Cow;

/// Unicode bidirectional formatting characters: they reorder the text around them on screen
/// (the "Trojan Source" trick), so `gnp.exe` can show as `exe.png`.
fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
    )
}

/// Whether a terminal would act on `c` rather than show it: C0 controls other than newline and
/// tab, DEL, C1 controls (U+0080–U+009F; `U+009B` is a one-character CSI) and bidi controls.
pub fn is_unsafe_for_terminal(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || is_bidi_control(c)
}

/// `text` with every character a terminal would act on shown as an escape: `\r`, `\x1b`,
/// `\x07`, `\x7f`, `\u{9b}`, `\u{202e}`. Newlines and tabs are kept. Borrowed when nothing
/// needed escaping.
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    escape_with(text, |c, out| match c {
        '\r' => out.push_str("\\r"),
        '\0'..='\u{7f}' => out.push_str(&format!("\\x{:02x}", c as u32)),
        _ => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
    })
}

/// [`escape_controls`] for JSON text: the same characters as `\uXXXX` escapes, so the JSON
/// still parses to the same value. (serde_json already escapes C0 controls inside strings;
/// this adds DEL, C1 and bidi controls, which it passes through.)
pub fn escape_json_controls(json: &str) -> Cow<'_, str> {
    escape_with(json, |c, out| {
        out.push_str(&format!("\\u{:04x}", c as u32));
    })
}

fn escape_with(text: &str, escape: impl Fn(char, &mut String)) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe_for_terminal) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_unsafe_for_terminal(c) {
            escape(c, &mut out);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_controls_are_shown_not_obeyed() {
        assert_eq!(
            escape_controls("a\u{1b}]0;pwned\u{7}b\u{1b}[2Jc"),
            "a\\x1b]0;pwned\\x07b\\x1b[2Jc"
        );
        assert_eq!(escape_controls("over\rwrite"), "over\\rwrite");
        assert_eq!(escape_controls("back\u{8}space"), "back\\x08space");
        assert_eq!(escape_controls("del\u{7f}"), "del\\x7f");
        assert_eq!(escape_controls("nul\0"), "nul\\x00");
        assert_eq!(escape_controls("csi\u{9b}31m"), "csi\\u{9b}31m");
        assert_eq!(escape_controls("c1 \u{80} \u{9f}"), "c1 \\u{80} \\u{9f}");
        assert_eq!(escape_controls("gnp\u{202e}.exe"), "gnp\\u{202e}.exe");
        assert_eq!(
            escape_controls("\u{2066}\u{2069}\u{200f}"),
            "\\u{2066}\\u{2069}\\u{200f}"
        );
    }

    #[test]
    fn newlines_tabs_and_ordinary_text_are_kept_as_they_are() {
        let text = "line one\n\tindented — é ✓ 日本 \u{a0}";
        assert!(matches!(escape_controls(text), Cow::Borrowed(t) if t == text));
        assert!(matches!(escape_json_controls(text), Cow::Borrowed(_)));
    }

    #[test]
    fn json_escapes_keep_the_json_valid_and_its_value_the_same() {
        let value = serde_json::json!({"text": "x\u{1b}[2J \u{9b}31m \u{202e} \u{7f}"});
        let json = serde_json::to_string(&value).unwrap_or_default();
        let escaped = escape_json_controls(&json);
        assert!(!escaped.chars().any(is_unsafe_for_terminal), "{escaped}");
        let back: serde_json::Value = serde_json::from_str(&escaped).unwrap_or_default();
        assert_eq!(back, value);
    }
}
