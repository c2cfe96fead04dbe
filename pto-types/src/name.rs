//! How messages show a name a user gave (an op, a value, an input, a tensor): in
//! backquotes, with the characters that would garble or disguise a terminal line escaped.

use core::fmt;

/// `name` in backquotes as a message shows it: control characters (C0, DEL, C1) and the
/// bidirectional formatting characters (embeddings, overrides, isolates and marks) escaped
/// as `\u{..}`, so that a name from a file cannot move the cursor, clear the line or make a
/// message read backwards; an empty name says so.
///
/// ```
/// use pto_types::name::quoted;
/// assert_eq!(quoted("gamma").to_string(), "`gamma`");
/// assert_eq!(quoted("x\u{202e}y").to_string(), "`x\\u{202e}y`");
/// assert_eq!(quoted("a\nb\u{1b}[2J").to_string(), "`a\\u{a}b\\u{1b}[2J`");
/// assert_eq!(quoted("").to_string(), "`` (an empty name)");
/// ```
pub fn quoted(name: &str) -> Quoted<'_> {
    Quoted(name)
}

/// A name as [`quoted`] shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quoted<'a>(pub &'a str);

/// Whether messages escape `c`: it controls the terminal or the direction of the text.
fn escaped(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("`")?;
        for c in self.0.chars() {
            if escaped(c) {
                write!(f, "\\u{{{:x}}}", u32::from(c))?;
            } else {
                fmt::Write::write_char(f, c)?;
            }
        }
        f.write_str("`")?;
        if self.0.is_empty() {
            f.write_str(" (an empty name)")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_control_and_bidi_character_is_escaped_and_nothing_else() {
        for c in [
            '\0', '\t', '\u{1f}', '\u{7f}', '\u{80}', '\u{9f}', '\u{202a}', '\u{202e}',
        ] {
            assert_eq!(
                quoted(&c.to_string()).to_string(),
                format!("`\\u{{{:x}}}`", u32::from(c))
            );
        }
        for c in ['\u{2066}', '\u{2069}', '\u{200e}', '\u{200f}', '\u{61c}'] {
            assert!(
                quoted(&c.to_string()).to_string().starts_with("`\\u{"),
                "{c:?}"
            );
        }
        assert_eq!(
            quoted("n0.y é 名前 \u{2065}").to_string(),
            "`n0.y é 名前 \u{2065}`"
        );
    }
}
