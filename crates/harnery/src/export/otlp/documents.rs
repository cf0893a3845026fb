//! OTLP/JSON documents: the `ExportTraceServiceRequest`s, one per line,
//! that carry traces' spans, each holding at most a set number of spans;
//! a trace that does not fit goes on in the next one under a repeat of its
//! resource. Spans are written straight into the text that goes out
//! ([`SpanSink`]).

use std::io::{self, Write};

/// Where a trace's spans go, each as it ends: the text each one is
/// written into.
pub(crate) trait SpanSink {
    /// The text to write the next span into (at its end).
    fn next_span(&mut self) -> io::Result<&mut String>;
}

/// What closes a resource that [`super::stream::TraceStream::resource_head`]
/// opened.
const RESOURCE_TAIL: &str = "]}]}";
const DOCUMENT_HEAD: &str = "{\"resourceSpans\":[";
const DOCUMENT_TAIL: &str = "]}\n";

/// Bytes of document text gathered before they are written out.
const WRITE_AT: usize = 64 * 1024;

/// Writes traces as `ExportTraceServiceRequest` documents, one per line,
/// each holding at most `limit` spans; a trace that does not fit goes on
/// in the next document under a repeat of its resource. No spans, no
/// document. Spans are written straight into the text that goes out.
pub(crate) struct Documents<W: Write> {
    out: W,
    /// Text not yet written out.
    text: String,
    limit: usize,
    spans_in_doc: usize,
    resources_in_doc: usize,
    doc_open: bool,
    /// The current resource's opening, and its spans in this document.
    head: String,
    in_resource: usize,
}

impl<W: Write> SpanSink for Documents<W> {
    /// Room for one span of the current resource, in the open document or
    /// in a new one (under a repeat of the resource) when that one is
    /// full.
    fn next_span(&mut self) -> io::Result<&mut String> {
        if self.text.len() >= WRITE_AT {
            self.out.write_all(self.text.as_bytes())?;
            self.text.clear();
        }
        if self.spans_in_doc == self.limit {
            self.end_resource();
            self.close();
        }
        if !self.doc_open {
            self.text.push_str(DOCUMENT_HEAD);
            self.doc_open = true;
        }
        if self.in_resource == 0 {
            if self.resources_in_doc > 0 {
                self.text.push(',');
            }
            self.text.push_str(&self.head);
            self.resources_in_doc += 1;
        } else {
            self.text.push(',');
        }
        self.in_resource += 1;
        self.spans_in_doc += 1;
        Ok(&mut self.text)
    }
}

impl<W: Write> Documents<W> {
    pub(crate) fn new(out: W, limit: usize) -> Documents<W> {
        assert!(limit > 0, "a document holds at least one span");
        Documents {
            out,
            text: String::with_capacity(WRITE_AT + 4096),
            limit,
            spans_in_doc: 0,
            resources_in_doc: 0,
            doc_open: false,
            head: String::new(),
            in_resource: 0,
        }
    }

    /// Begin a session's spans under `head` (its resource's opening).
    pub(crate) fn start_resource(&mut self, head: &str) {
        self.head.clear();
        self.head.push_str(head);
        self.in_resource = 0;
    }

    /// Close the current resource, if it has a span in this document.
    pub(crate) fn end_resource(&mut self) {
        if self.in_resource > 0 {
            self.text.push_str(RESOURCE_TAIL);
            self.in_resource = 0;
        }
    }

    /// Close the last document; hand back the writer.
    pub(crate) fn finish(mut self) -> io::Result<W> {
        self.end_resource();
        if self.doc_open {
            self.close();
        }
        self.out.write_all(self.text.as_bytes())?;
        Ok(self.out)
    }

    fn close(&mut self) {
        self.text.push_str(DOCUMENT_TAIL);
        self.doc_open = false;
        self.spans_in_doc = 0;
        self.resources_in_doc = 0;
    }
}
