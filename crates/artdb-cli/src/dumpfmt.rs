//! The text dump format of LMDB's `mdb_dump`/`mdb_load` and Berkeley DB's `db_dump`/`db_load`,
//! which `artdb dump` writes and `artdb restore` reads.
//!
//! A dump is one or more sections. A section is header lines `keyword=value`, `HEADER=END`,
//! data lines, `DATA=END`:
//!
//! ```text
//! VERSION=3
//! format=bytevalue        (or `print`)
//! database=orders         (absent: the default table, `main` in artdb, LMDB's main database)
//! type=btree
//! mapsize=1073741824      (LMDB: the map size `mdb_load` sets up)
//! HEADER=END
//!  6b31                   (a key: one leading space, then the bytes)
//!  7631                   (its value)
//! DATA=END
//! ```
//!
//! `bytevalue`: lowercase hex, two digits a byte. `print`: printable ASCII (0x20..=0x7e) stands
//! for itself except `\`, written `\\`; any other byte is `\` and two hex digits. Keys and values
//! alternate. Unknown header keywords are ignored (as `mdb_load` does); `type=recno`/`queue`
//! (record numbers, not keys) and duplicate-key databases (`duplicates=1`, `dupsort=1`) are
//! refused; `reversekey=1`/`integerkey=1` and `type=hash` (Berkeley DB's hash order) mark an
//! order other than artdb's bytewise one (the pairs are loaded unordered).
//!
//! Hazard (LMDB interop): `mdb_load` 0.9 does not reset the database name between sections,
//! so a section without `database=` after a named one would go into that named database; the
//! writer therefore puts the default table's section first.
//!
//! Limits: a line is at most `LINE_BYTES_MAX` bytes; larger is an error naming the line.
//!
//! Names: header values have no escapes, so a `database=` name that is not UTF-8 (LMDB's names
//! are bytes) is refused rather than restored under another name, and `artdb dump` refuses a
//! table whose name holds a line break (`name_fits_header`) before writing anything.

use std::io::{BufRead, Write};

/// Longest line `DumpReader` accepts (a 64 MiB value in hex, with room to spare).
pub const LINE_BYTES_MAX: usize = 160 << 20;

/// A key and its value.
pub type Pair = (Vec<u8>, Vec<u8>);

/// How data lines encode bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `format=bytevalue`: hex.
    Hex,
    /// `format=print`: printable characters and `\xx` escapes.
    Print,
}

/// The header of one section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// How data lines are encoded.
    pub format: Format,
    /// `database=` (or Berkeley DB's `subdatabase=`); `None` is the default table.
    pub database: Option<String>,
    /// The keys are not in bytewise order (`reversekey=1` or `integerkey=1`).
    pub unordered: bool,
    /// The line of `HEADER=END`.
    pub line: u64,
}

/// A dump error: what is wrong and on which line.
#[derive(Debug)]
pub struct DumpError(pub String);

impl std::fmt::Display for DumpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DumpError {}

fn error<T>(message: String) -> Result<T, DumpError> {
    Err(DumpError(message))
}

/// Reads sections and pairs from a dump.
pub struct DumpReader<R> {
    reader: R,
    line: Vec<u8>,
    /// Lines read so far (the current line's number).
    pub line_number: u64,
    /// Bytes read so far.
    pub bytes_read: u64,
    /// The format of the section being read, if inside its data.
    data: Option<(Format, String)>,
}

impl<R: BufRead> DumpReader<R> {
    /// A reader over `reader`.
    pub fn new(reader: R) -> DumpReader<R> {
        DumpReader {
            reader,
            line: Vec::new(),
            line_number: 0,
            bytes_read: 0,
            data: None,
        }
    }

    /// Reads the next line into `self.line` without its end; false at the end of the input.
    fn read_line(&mut self) -> Result<bool, DumpError> {
        self.line.clear();
        let read = <&mut R as std::io::Read>::take(&mut self.reader, LINE_BYTES_MAX as u64 + 2)
            .read_until(b'\n', &mut self.line)
            .map_err(|e| DumpError(format!("cannot read the dump: {e}")))?;
        if read == 0 {
            return Ok(false);
        }
        self.line_number += 1;
        self.bytes_read += read as u64;
        if self.line.last() == Some(&b'\n') {
            self.line.pop();
            if self.line.last() == Some(&b'\r') {
                self.line.pop();
            }
        } else if self.line.len() > LINE_BYTES_MAX {
            return error(format!(
                "line {}: longer than {LINE_BYTES_MAX} bytes",
                self.line_number
            ));
        }
        Ok(true)
    }

    /// Reads the next section's header; `None` at the end of the input. Must not be called
    /// inside a section's data (read its pairs to the end first).
    pub fn next_section(&mut self) -> Result<Option<Header>, DumpError> {
        debug_assert!(self.data.is_none(), "next_section inside a section's data");
        let mut format = None;
        let mut database = None;
        let mut unordered = false;
        let mut started = false;
        loop {
            if !self.read_line()? {
                if started {
                    return error(format!(
                        "the dump is truncated: it ends at line {} inside a header (no HEADER=END)",
                        self.line_number
                    ));
                }
                return Ok(None);
            }
            let number = self.line_number;
            if !started && self.line.is_empty() {
                continue;
            }
            let text = String::from_utf8_lossy(&self.line).into_owned();
            if text == "HEADER=END" {
                if !started {
                    return error(format!("line {number}: HEADER=END before VERSION="));
                }
                let Some(format) = format else {
                    return error(format!(
                        "line {number}: the header has no format= (bytevalue or print)"
                    ));
                };
                let name = database.clone().unwrap_or_else(|| "main".to_string());
                self.data = Some((format, name));
                return Ok(Some(Header {
                    format,
                    database,
                    unordered,
                    line: number,
                }));
            }
            let Some((keyword, value)) = text.split_once('=') else {
                return error(format!(
                    "line {number}: expected a header line `keyword=value` or HEADER=END, found \
                     {:?}; is this a dump made by `artdb dump`, `mdb_dump` or `db_dump`?",
                    clip(&text)
                ));
            };
            if !started {
                if keyword != "VERSION" {
                    return error(format!(
                        "line {number}: a section must start with VERSION=3, found {:?}",
                        clip(&text)
                    ));
                }
                started = true;
            }
            match keyword {
                "VERSION" if value != "3" => {
                    return error(format!(
                        "line {number}: dump version {value:?} is not supported (artdb reads \
                         VERSION=3, what mdb_dump and db_dump write)"
                    ))
                }
                "format" => {
                    format = Some(match value {
                        "bytevalue" => Format::Hex,
                        "print" => Format::Print,
                        _ => {
                            return error(format!(
                                "line {number}: unknown format {value:?} (bytevalue or print)"
                            ))
                        }
                    })
                }
                "database" | "subdatabase" => {
                    // Table names are UTF-8; a lossy conversion would restore the pairs under
                    // another name without a word.
                    let Ok(line) = std::str::from_utf8(&self.line) else {
                        return error(format!(
                            "line {number}: the name in {keyword}= is not UTF-8 text ({:?}); \
                             artdb table names are UTF-8: rename the database at its source, \
                             or edit this line of the dump",
                            clip(value)
                        ));
                    };
                    let name = line.split_once('=').map_or("", |(_, name)| name);
                    database = Some(name.to_string());
                }
                // Berkeley DB's hash databases dump in hash order: load them as unordered.
                "type" if value == "hash" => unordered = true,
                "type" if value != "btree" => {
                    return error(format!(
                        "line {number}: type={value} holds record numbers, not keys; artdb \
                         restores btree and hash dumps"
                    ))
                }
                "duplicates" | "dupsort" if value == "1" => {
                    return error(format!(
                        "line {number}: the database has duplicate keys ({keyword}=1); an artdb \
                         table holds one value per key"
                    ))
                }
                "reversekey" | "integerkey" if value == "1" => unordered = true,
                _ => {}
            }
        }
    }

    /// The next pair of the current section; `None` at its `DATA=END`.
    pub fn next_pair(&mut self) -> Result<Option<Pair>, DumpError> {
        let Some((format, name)) = self.data.clone() else {
            return Ok(None);
        };
        let Some(key) = self.data_line(format, &name, true)? else {
            self.data = None;
            return Ok(None);
        };
        let key_line = self.line_number;
        if key.len() > artdb_art::KEY_LEN_MAX {
            return error(format!(
                "line {key_line}: key of {} bytes is longer than the limit of {} bytes",
                key.len(),
                artdb_art::KEY_LEN_MAX
            ));
        }
        let Some(value) = self.data_line(format, &name, false)? else {
            return error(format!(
                "line {}: DATA=END right after the key on line {key_line}, which has no value",
                self.line_number
            ));
        };
        Ok(Some((key, value)))
    }

    fn data_line(
        &mut self,
        format: Format,
        name: &str,
        key: bool,
    ) -> Result<Option<Vec<u8>>, DumpError> {
        if !self.read_line()? {
            return error(format!(
                "the dump is truncated: it ends at line {} inside the data of table {name:?} \
                 (no DATA=END); nothing of it was restored",
                self.line_number
            ));
        }
        let number = self.line_number;
        if self.line == b"DATA=END" {
            return Ok(None);
        }
        let Some(body) = self.line.strip_prefix(b" ") else {
            return error(format!(
                "line {number}: expected a {} line (one space, then the bytes) or DATA=END, \
                 found {:?}",
                if key { "key" } else { "value" },
                clip(&String::from_utf8_lossy(&self.line))
            ));
        };
        decode(body, format).map(Some).map_err(|what| {
            DumpError(format!(
                "line {number}: {what} in a {} {}",
                if format == Format::Hex {
                    "bytevalue (hex)"
                } else {
                    "print"
                },
                if key { "key" } else { "value" }
            ))
        })
    }
}

fn clip(text: &str) -> String {
    text.chars().take(60).collect()
}

fn hex_value(byte: u8) -> Option<u8> {
    (byte as char).to_digit(16).map(|digit| digit as u8)
}

/// Decodes one data line's bytes.
pub fn decode(body: &[u8], format: Format) -> Result<Vec<u8>, String> {
    match format {
        Format::Hex => {
            if !body.len().is_multiple_of(2) {
                return Err("an odd number of hex digits".into());
            }
            body.chunks_exact(2)
                .map(|pair| match (hex_value(pair[0]), hex_value(pair[1])) {
                    (Some(high), Some(low)) => Ok(high << 4 | low),
                    _ => Err(format!(
                        "{:?} is not a hex byte",
                        String::from_utf8_lossy(pair)
                    )),
                })
                .collect()
        }
        Format::Print => {
            let mut bytes = Vec::with_capacity(body.len());
            let mut at = 0;
            while at < body.len() {
                if body[at] != b'\\' {
                    bytes.push(body[at]);
                    at += 1;
                    continue;
                }
                if body.get(at + 1) == Some(&b'\\') {
                    bytes.push(b'\\');
                    at += 2;
                    continue;
                }
                match (
                    body.get(at + 1).copied().and_then(hex_value),
                    body.get(at + 2).copied().and_then(hex_value),
                ) {
                    (Some(high), Some(low)) => bytes.push(high << 4 | low),
                    _ => {
                        return Err(format!(
                            "bad escape at byte {} (print format writes a backslash as \\\\ and \
                             other bytes as \\xx; LMDB 0.9's `mdb_dump -p` leaves backslashes \
                             unescaped: dump without -p, in hex, which is exact)",
                            at + 1
                        ))
                    }
                }
                at += 3;
            }
            Ok(bytes)
        }
    }
}

/// Appends one data line (leading space, encoded bytes, newline) to `out`.
pub fn encode_line(bytes: &[u8], format: Format, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b' ');
    for &byte in bytes {
        match format {
            Format::Hex => {
                out.push(HEX[usize::from(byte >> 4)]);
                out.push(HEX[usize::from(byte & 15)]);
            }
            Format::Print if byte == b'\\' => out.extend_from_slice(b"\\\\"),
            Format::Print if (0x20..=0x7e).contains(&byte) => out.push(byte),
            Format::Print => {
                out.push(b'\\');
                out.push(HEX[usize::from(byte >> 4)]);
                out.push(HEX[usize::from(byte & 15)]);
            }
        }
    }
    out.push(b'\n');
}

/// Whether the table name `name` can be written as a `database=` header line: a line break
/// in it would end the line, and the rest would be read back as header lines of their own.
pub fn name_fits_header(name: &str) -> bool {
    !name.contains(['\n', '\r'])
}

/// Writes a section header (`database` must satisfy [`name_fits_header`]).
pub fn write_header(
    out: &mut impl Write,
    format: Format,
    database: Option<&str>,
    map_bytes: u64,
) -> std::io::Result<()> {
    writeln!(out, "VERSION=3")?;
    match format {
        Format::Hex => writeln!(out, "format=bytevalue")?,
        Format::Print => writeln!(out, "format=print")?,
    }
    if let Some(database) = database {
        debug_assert!(name_fits_header(database), "a line break in {database:?}");
        writeln!(out, "database={database}")?;
    }
    writeln!(out, "type=btree")?;
    writeln!(out, "mapsize={map_bytes}")?;
    writeln!(out, "HEADER=END")
}

/// Writes the end of a section's data.
pub fn write_end(out: &mut impl Write) -> std::io::Result<()> {
    writeln!(out, "DATA=END")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(text: &[u8]) -> Result<Vec<(Header, Vec<Pair>)>, DumpError> {
        let mut reader = DumpReader::new(text);
        let mut sections = Vec::new();
        while let Some(header) = reader.next_section()? {
            let mut pairs = Vec::new();
            while let Some(pair) = reader.next_pair()? {
                pairs.push(pair);
            }
            sections.push((header, pairs));
        }
        Ok(sections)
    }

    #[test]
    fn every_byte_round_trips_in_both_formats() {
        let all: Vec<u8> = (0..=255).collect();
        for format in [Format::Hex, Format::Print] {
            let mut line = Vec::new();
            encode_line(&all, format, &mut line);
            assert_eq!(line[0], b' ');
            assert_eq!(line.last(), Some(&b'\n'));
            assert_eq!(decode(&line[1..line.len() - 1], format).unwrap(), all);
        }
    }

    #[test]
    fn reads_mdb_dump_output() {
        let dump = b"VERSION=3\nformat=print\ndatabase=sub1\ntype=btree\nmapsize=1048576\n\
                     maxreaders=126\ndb_pagesize=4096\nHEADER=END\n a\\00b\n hello world\\\\0a\n\
                     DATA=END\nVERSION=3\nformat=bytevalue\ntype=btree\nHEADER=END\n 6b31\n 7631\n\
                     DATA=END\n";
        let sections = read_all(dump).unwrap();
        assert_eq!(sections.len(), 2);
        assert_eq!(sections[0].0.database.as_deref(), Some("sub1"));
        assert_eq!(
            sections[0].1,
            vec![(b"a\x00b".to_vec(), b"hello world\\0a".to_vec())]
        );
        assert_eq!(sections[1].0.database, None);
        assert_eq!(sections[1].1, vec![(b"k1".to_vec(), b"v1".to_vec())]);
    }

    #[test]
    fn bad_input_is_an_error_naming_the_line() {
        let cases: &[(&[u8], &str)] = &[
            (
                b"VERSION=3\nformat=bytevalue\nHEADER=END\n 6b3\n 00\nDATA=END\n",
                "line 4",
            ),
            (
                b"VERSION=3\nformat=bytevalue\nHEADER=END\n 6b\n zz\nDATA=END\n",
                "line 5",
            ),
            (
                b"VERSION=3\nformat=bytevalue\nHEADER=END\n 6b\nDATA=END\n",
                "no value",
            ),
            (
                b"VERSION=3\nformat=bytevalue\nHEADER=END\n 6b\n 00\n",
                "truncated",
            ),
            (
                b"VERSION=3\nformat=bytevalue\nHEADER=END\n 6b\n",
                "truncated",
            ),
            (b"VERSION=3\nformat=bytevalue\n", "truncated"),
            (
                b"VERSION=3\nformat=bytevalue\nHEADER=END\n6b\n 00\nDATA=END\n",
                "line 4",
            ),
            (
                b"VERSION=3\nformat=print\nHEADER=END\n a\\q\n 00\nDATA=END\n",
                "bad escape",
            ),
            (b"hello\n", "line 1"),
            (
                b"VERSION=2\nformat=print\nHEADER=END\nDATA=END\n",
                "version",
            ),
            (
                b"VERSION=3\nformat=print\ntype=recno\nHEADER=END\nDATA=END\n",
                "recno",
            ),
            (
                b"VERSION=3\nformat=print\nduplicates=1\nHEADER=END\nDATA=END\n",
                "duplicate",
            ),
            (b"VERSION=3\ntype=btree\nHEADER=END\nDATA=END\n", "format="),
        ];
        for (dump, expected) in cases {
            let message = read_all(dump).unwrap_err().to_string();
            assert!(
                message.contains(expected),
                "{:?}: {message}",
                String::from_utf8_lossy(dump)
            );
        }
    }
}
