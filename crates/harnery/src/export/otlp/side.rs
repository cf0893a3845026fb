//! One side of a span (its request or its terminal) as the OTLP trace
//! reads it: a tool row with its run's text, or an event read whole; and
//! the span made of two such sides.

use super::traced::ToolView;
use crate::contract::{Event, Observation, Outcome, Recovery};
use crate::report::spans::{Span, SpanSide};

/// A span's request or terminal as the trace reads it: a tool row with
/// its run's text, or an event read whole.
#[derive(Clone, Copy)]
pub(super) enum Side<'a> {
    Tool(ToolView<'a>),
    Event(&'a Event),
}

impl<'a> Side<'a> {
    /// The event, where the row was read whole: only then can it be a
    /// command, or carry an error or an exit code.
    pub(super) fn event(self) -> Option<&'a Event> {
        match self {
            Side::Event(e) => Some(e),
            Side::Tool(_) => None,
        }
    }

    pub(super) fn offset(self) -> u64 {
        match self {
            Side::Tool(t) => t.row.offset,
            Side::Event(e) => e.offset,
        }
    }
}

/// Each read of [`SpanSide`], from whichever row the side is.
macro_rules! either_side {
    ($($read:ident -> $ty:ty;)*) => {
        impl<'a> SpanSide<'a> for Side<'a> {
            $(fn $read(self) -> $ty {
                match self {
                    Side::Tool(t) => t.$read(),
                    Side::Event(e) => e.$read(),
                }
            })*
        }
    };
}

either_side! {
    event_id -> &'a str;
    time_unix_ns -> i64;
    turn_id -> Option<&'a str>;
    tool_name -> Option<&'a str>;
    tool_call_id -> Option<&'a str>;
    outcome -> Option<Outcome>;
    reported_duration -> Option<&'a Observation<u64>>;
    recovery -> Option<&'a Recovery>;
    link -> Option<&'a str>;
}

/// A span as the trace maps it.
pub(super) type TraceSpan<'a> = Span<'a, Side<'a>>;
