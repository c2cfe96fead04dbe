//! The source writer: indented C++ lines, each routed to the sides of a split kernel it
//! belongs to.

/// Which generated function a line goes to, as a bit set: the block program of a coupled
/// core or the vector core (AIV) ([`VEC`]), the cube core's (AIC) ([`CUBE`]), and the
/// second vector core's, which only takes part in the cross-core handshakes ([`SYNC`]).
pub(super) type Sides = u8;

/// The vector side (and every line of a coupled kernel).
pub(super) const VEC: Sides = 1;

/// The cube side of a split (mix) kernel.
pub(super) const CUBE: Sides = 2;

/// The handshakes of the vector side, which the other AIV runs too.
pub(super) const SYNC: Sides = 4;

/// Every side (loop headers).
pub(super) const ALL: Sides = VEC | CUBE | SYNC;

/// Indented C++ text: the vector (or coupled) side in `text`, and for a split kernel the
/// cube side and the handshakes of the AIV that does not run the block program.
pub(super) struct Code {
    pub(super) text: String,
    pub(super) cube: String,
    pub(super) sync: String,
    pub(super) indent: usize,
    /// Where [`Code::line`] writes.
    pub(super) sides: Sides,
}

impl Default for Code {
    fn default() -> Code {
        Code {
            text: String::new(),
            cube: String::new(),
            sync: String::new(),
            indent: 0,
            sides: VEC,
        }
    }
}

impl Code {
    pub(super) fn line(&mut self, line: impl AsRef<str>) {
        let indent = self.indent;
        for (side, text) in [
            (VEC, &mut self.text),
            (CUBE, &mut self.cube),
            (SYNC, &mut self.sync),
        ] {
            if self.sides & side != 0 {
                for _ in 0..indent {
                    text.push_str("    ");
                }
                text.push_str(line.as_ref());
                text.push('\n');
            }
        }
    }

    /// The `SetFlag` / `WaitFlag` pair of `HardEvent::{event}` (`MTE2_V`: the vector pipe
    /// waits until the copy in before it is done), on an event id of the TPipe that no TQue
    /// holds (`FetchEventID`: the docs' form for a pair issued together; a fixed `EVENT_ID0`
    /// may be the id a TQue's `EnQue` or `FreeTensor` has set).
    pub(super) fn set_wait(&mut self, event: &str) {
        self.open("");
        self.line(format!(
            "const TEventID sync = GetTPipePtr()->FetchEventID<HardEvent::{event}>();"
        ));
        self.line(format!("SetFlag<HardEvent::{event}>(sync);"));
        self.line(format!("WaitFlag<HardEvent::{event}>(sync);"));
        self.close();
    }

    /// Opens a loop over the rows `r` of a tile of `rows` rows.
    pub(super) fn open_rows(&mut self, rows: usize) {
        self.open(format!("for (int64_t r = 0; r < {rows}; ++r)"));
    }

    /// `line` once per row `r` of a tile of `rows` rows.
    pub(super) fn for_rows(&mut self, rows: usize, line: impl AsRef<str>) {
        self.open_rows(rows);
        self.line(line);
        self.close();
    }

    pub(super) fn open(&mut self, line: impl AsRef<str>) {
        let line = line.as_ref();
        self.line(if line.is_empty() {
            "{".to_owned()
        } else {
            format!("{line} {{")
        });
        self.indent += 1;
    }

    pub(super) fn close(&mut self) {
        self.indent = self.indent.saturating_sub(1);
        self.line("}");
    }
}
