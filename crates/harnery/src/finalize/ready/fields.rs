//! The fields of a `harnery.ready.v4` signal or state frame, one after
//! the other: a text is `u32le(len) ‖ UTF-8`, an optional text a `0` byte,
//! or a `1` byte and the text, a number eight bytes little-endian, a count
//! a `u32le`. Nothing is escaped, so writing a field is a copy.

pub(super) fn put_count(buf: &mut Vec<u8>, n: usize) -> std::io::Result<()> {
    let n = u32::try_from(n)
        .map_err(|_| std::io::Error::other(format!("{n} does not fit a ready file's u32")))?;
    buf.extend_from_slice(&n.to_le_bytes());
    Ok(())
}

pub(super) fn put_text(buf: &mut Vec<u8>, text: &str) -> std::io::Result<()> {
    put_count(buf, text.len())?;
    buf.extend_from_slice(text.as_bytes());
    Ok(())
}

pub(super) fn put_optional(buf: &mut Vec<u8>, text: Option<&str>) -> std::io::Result<()> {
    match text {
        None => {
            buf.push(0);
            Ok(())
        }
        Some(text) => {
            buf.push(1);
            put_text(buf, text)
        }
    }
}

/// The fields of a v4 `S` or `T` frame, read off the front of its body.
pub(super) struct Fields<'a>(pub(super) &'a [u8]);

impl<'a> Fields<'a> {
    fn bytes(&mut self, n: usize) -> Result<&'a [u8], String> {
        if n > self.0.len() {
            let left = self.0.len();
            return Err(format!(
                "field runs past the end of its frame ({n} bytes, {left} left)"
            ));
        }
        let (field, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(field)
    }

    pub(super) fn word<const N: usize>(&mut self) -> Result<[u8; N], String> {
        Ok(self.bytes(N)?.try_into().expect("bytes(N) is N bytes long"))
    }

    pub(super) fn count(&mut self) -> Result<usize, String> {
        Ok(u32::from_le_bytes(self.word()?) as usize)
    }

    pub(super) fn text(&mut self) -> Result<&'a str, String> {
        let len = self.count()?;
        let bytes = self.bytes(len)?;
        std::str::from_utf8(bytes).map_err(|e| format!("text field: {e}"))
    }

    pub(super) fn optional(&mut self) -> Result<Option<&'a str>, String> {
        match self.word::<1>()? {
            [0] => Ok(None),
            [1] => self.text().map(Some),
            [tag] => Err(format!("optional field tagged {tag}")),
        }
    }

    /// The rest of the frame as text.
    pub(super) fn rest(self) -> Result<&'a str, String> {
        std::str::from_utf8(self.0).map_err(|e| format!("text: {e}"))
    }

    pub(super) fn end(self) -> Result<(), String> {
        match self.0.len() {
            0 => Ok(()),
            n => Err(format!("has {n} bytes after its last field")),
        }
    }
}
