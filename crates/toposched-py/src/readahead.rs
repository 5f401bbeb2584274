//! A log read ahead on a thread of its own (issue 17: the whole `simulate` command).
//!
//! `simulate` starts a [`SwfReadAhead`] as soon as it knows the log's path; a Rust thread
//! reads the file, inflates it if it is gzip (on a second thread, a block at a time, while
//! the first cuts and parses what has arrived) and cuts the SWF body into the chunks
//! `swf.read_swf` will cut, running [`parse_plain`] on each, all without the
//! interpreter lock and touching no Python object, while the main thread loads the
//! fabric and another one imports NumPy and PyArrow. When the reader asks
//! ([`SwfReadAhead::take`], under the lock), the bytes and the parsed chunks become
//! Python objects.
//!
//! Nothing here decides anything the reader would not: every rule (the header block, the
//! chunk boundaries, the CR repair, what a plain chunk is) is the reader's, and the
//! reader uses a chunk only when its own walk over the bytes ends it at the same offsets.
//! Any failure here (a read error, gzip data `gzip.decompress` might judge otherwise)
//! gives `None`: the reader then reads the file itself and reports its own error.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::readers::parse_plain;

/// How `swf.read_swf` cuts and parses the body: its constants, passed from Python.
struct Layout {
    chunk_bytes: usize,
    used: Vec<usize>,
    n_fields: usize,
    max_digits: usize,
    /// Bytes per block a gzip log is inflated in.
    inflate_bytes: usize,
}

/// `parse_plain`'s result: kept values, line index of each record, lines in the chunk.
type Parsed = (Vec<i64>, Vec<i64>, usize);

/// One body chunk: its byte offsets in the (decompressed) log and `parse_plain`'s result
/// (None: not plain SWF, the reader's other paths read it).
struct Chunk {
    start: usize,
    end: usize,
    parsed: Option<Parsed>,
}

/// What the thread read: the whole log, decompressed, and its body's chunks (none when
/// the bytes need the reader's CR repair, or the read-ahead was cancelled).
struct Fetched {
    data: Vec<u8>,
    chunks: Vec<Chunk>,
}

enum State {
    Running(JoinHandle<Option<Fetched>>),
    /// None: failed (the reader reads the file itself), cancelled, or taken.
    Finished(Option<Fetched>),
}

/// Chunks as Python gets them: (start, end, `swf_plain_chunk`'s result or None).
type PyChunks<'py> = Vec<(usize, usize, Option<(Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<i64>>, usize)>)>;

/// A log file read, decompressed and parsed ahead on a thread (see the module doc).
#[pyclass(frozen, module = "toposched._core")]
pub struct SwfReadAhead {
    state: Mutex<State>,
    cancel: Arc<AtomicBool>,
}

#[pymethods]
impl SwfReadAhead {
    /// Start reading `path` on a thread and return at once. `chunk_bytes`, `used`,
    /// `n_fields` and `max_digits` are `swf.read_swf`'s chunk size and
    /// `swf_plain_chunk`'s arguments; `inflate_bytes`, the blocks a gzip log is inflated
    /// in while the chunks are parsed (the same chunks whatever it is).
    #[new]
    #[pyo3(signature = (path, chunk_bytes, used, n_fields, max_digits, *, inflate_bytes=INFLATE_BLOCK_BYTES))]
    fn new(path: PathBuf, chunk_bytes: usize, used: Vec<usize>, n_fields: usize, max_digits: usize, inflate_bytes: usize) -> Self {
        let layout = Layout { chunk_bytes, used, n_fields, max_digits, inflate_bytes };
        let cancel = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&cancel);
        let spawned = std::thread::Builder::new()
            .name("toposched-readahead".into())
            .spawn(move || read_ahead(&path, &layout, &flag));
        let state = match spawned {
            Ok(handle) => State::Running(handle),
            Err(_) => State::Finished(None), // no thread: the reader reads the file itself
        };
        SwfReadAhead { state: Mutex::new(state), cancel }
    }

    /// Hand over what the thread read, once: (the decompressed log, its body chunks as
    /// (start, end, parsed)), `parsed` being `swf_plain_chunk`'s result for
    /// `data[start:end]` or None, chunks in file order; with `chunks=False`, the bytes and
    /// an empty list. Waits for the thread without the interpreter lock. None when the
    /// read-ahead failed, was cancelled or taken already: the reader reads the file itself.
    #[pyo3(signature = (*, chunks))]
    fn take<'py>(&self, py: Python<'py>, chunks: bool) -> PyResult<Option<(Bound<'py, PyBytes>, PyChunks<'py>)>> {
        py.allow_threads(|| self.finish());
        if chunks {
            crate::numpy_api(py)?; // before anything is taken: a Ctrl-C here leaves it all in place
        }
        let Some(fetched) = (match &mut *self.lock() {
            State::Finished(fetched) => fetched.take(),
            State::Running(_) => None, // (finish() has joined it)
        }) else {
            return Ok(None);
        };
        // The one copy of the log (the header walk and the reader's other paths need a
        // real bytes object), without the interpreter lock: the object is nobody else's
        // until it is returned, and the import thread goes on meanwhile.
        let data = PyBytes::new_with(py, fetched.data.len(), |buf| {
            py.allow_threads(|| buf.copy_from_slice(&fetched.data));
            Ok(())
        })?;
        drop(fetched.data);
        let parsed = if chunks {
            fetched
                .chunks
                .into_iter()
                .map(|c| {
                    let arrays = c.parsed.map(|(values, lines, n_lines)| (PyArray1::from_vec(py, values), PyArray1::from_vec(py, lines), n_lines));
                    (c.start, c.end, arrays)
                })
                .collect()
        } else {
            Vec::new()
        };
        Ok(Some((data, parsed)))
    }

    /// Wait (without the interpreter lock) until the thread has finished.
    fn wait(&self, py: Python<'_>) {
        py.allow_threads(|| self.finish());
    }

    /// Ask the thread to stop parsing (nobody will take what it read) and drop what it
    /// has read.
    fn cancel(&self) {
        self.cancel.store(true, Ordering::Relaxed);
        if let State::Finished(fetched) = &mut *self.lock() {
            *fetched = None;
        }
        // a running thread is not waited for: it stops at its next chunk, and its result
        // is dropped with this object
    }
}

impl SwfReadAhead {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Join the thread if it runs (call without the interpreter lock: the lock is held
    /// meanwhile, and other callers take it holding the interpreter's).
    fn finish(&self) {
        let mut state = self.lock();
        if matches!(*state, State::Running(_)) {
            if let State::Running(handle) = std::mem::replace(&mut *state, State::Finished(None)) {
                // a panic on the thread is a failed read-ahead: the reader reads itself
                *state = State::Finished(handle.join().ok().flatten());
            }
        }
    }
}

/// The thread's work: read, inflate, cut and parse. None on any failure.
///
/// A gzip log is inflated on a second thread, a block at a time, while this one cuts and
/// parses the chunks the blocks complete (inflating HPC2N's 19 MB takes about as long as
/// parsing them: one after the other they were the longest wait of `simulate`). The
/// chunks are those [`swf_chunks`] cuts on the whole bytes ([`Cutter`]).
fn read_ahead(path: &Path, layout: &Layout, cancel: &AtomicBool) -> Option<Fetched> {
    let raw = std::fs::read(path).ok()?;
    if !raw.starts_with(&[0x1f, 0x8b]) {
        let chunks = if needs_cr_repair(&raw) { Vec::new() } else { swf_chunks(&raw, layout, cancel) };
        return Some(Fetched { data: raw, chunks });
    }
    let (blocks, received) = std::sync::mpsc::sync_channel::<Vec<u8>>(INFLATE_QUEUE_BLOCKS);
    let (compressed, block_bytes) = (&raw, layout.inflate_bytes);
    std::thread::scope(|scope| {
        // the sender moves to the inflater: the blocks end when it returns
        let inflater = std::thread::Builder::new()
            .name("toposched-inflate".into())
            .spawn_scoped(scope, move || gunzip_blocks(compressed, block_bytes, &blocks, cancel))
            .ok()?;
        let mut data = Vec::with_capacity(inflated_size_hint(&raw));
        let mut cutter = Cutter::default();
        for block in received.iter() {
            data.extend_from_slice(&block);
            cutter.advance(&data, false, layout, cancel);
        }
        // the channel closes when the inflater returns: whole, failed or cancelled
        if !inflater.join().ok()? {
            return None;
        }
        if needs_cr_repair(&data) {
            return Some(Fetched { data, chunks: Vec::new() });
        }
        cutter.advance(&data, true, layout, cancel);
        Some(Fetched { data, chunks: cutter.chunks })
    })
}

/// The default block size of the inflater (`inflate_bytes`).
const INFLATE_BLOCK_BYTES: usize = 1 << 20;

/// Inflated blocks the inflater may have sent ahead of the parser (bounds the memory
/// held twice).
const INFLATE_QUEUE_BLOCKS: usize = 8;

/// The size of a gzip file's inflated bytes as its last member's trailer says (modulo
/// 2**32: the whole size for a one-member file under 4 GiB), capped: a capacity hint.
fn inflated_size_hint(compressed: &[u8]) -> usize {
    compressed
        .len()
        .checked_sub(4)
        .map_or(0, |at| u32::from_le_bytes([compressed[at], compressed[at + 1], compressed[at + 2], compressed[at + 3]]) as usize)
        .min(compressed.len().saturating_mul(16).max(1 << 20))
}

/// Every member of a gzip file, inflated as `gzip.decompress` inflates them, sent as
/// blocks of at most `block_bytes`; false for anything it might judge otherwise (corrupt
/// or truncated data, trailing bytes: also the zero padding it accepts), which the
/// reader then decompresses itself, and when cancelled.
fn gunzip_blocks(compressed: &[u8], block_bytes: usize, blocks: &std::sync::mpsc::SyncSender<Vec<u8>>, cancel: &AtomicBool) -> bool {
    let mut decoder = flate2::bufread::MultiGzDecoder::new(compressed);
    loop {
        if cancel.load(Ordering::Relaxed) {
            return false;
        }
        let mut block = vec![0u8; block_bytes.max(1)];
        let mut filled = 0;
        while filled < block.len() {
            match decoder.read(&mut block[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
        if filled == 0 {
            return true;
        }
        block.truncate(filled);
        let last = filled < block_bytes.max(1);
        if blocks.send(block).is_err() {
            return false; // the parser is gone
        }
        if last {
            // a short block is the end: read() returned 0 (nothing more) above
            return true;
        }
    }
}

/// Every member of a gzip file, inflated, as `gzip.decompress` gives them; None for
/// anything it might judge otherwise (see [`gunzip_blocks`]).
#[cfg(test)]
fn gunzip(compressed: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(inflated_size_hint(compressed));
    flate2::bufread::MultiGzDecoder::new(compressed).read_to_end(&mut out).ok()?;
    Some(out)
}

/// Whether `read_swf` rewrites the line ends (a CR that does not start a CRLF): then the
/// chunks of these bytes are not the reader's, and none are parsed.
fn needs_cr_repair(data: &[u8]) -> bool {
    // (memchr: a plain byte count runs at a quarter of the speed, and most logs hold no CR)
    memchr::memchr(b'\r', data).is_some() && memchr::memchr_iter(b'\r', data).count() != memchr::memmem::find_iter(data, b"\r\n").count()
}

/// A blank for Python's `bytes.strip()`.
fn is_py_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// One past the first '\n' at or after `from`, or the end.
fn line_end(data: &[u8], from: usize) -> usize {
    memchr::memchr(b'\n', &data[from..]).map_or(data.len(), |i| from + i + 1)
}

/// The body's chunks as `read_swf` cuts them (after a byte-order mark and the leading
/// block of comment and blank lines, ends at the first newline at or after
/// `start + chunk_bytes`), each parsed. Stops early when cancelled.
fn swf_chunks(data: &[u8], layout: &Layout, cancel: &AtomicBool) -> Vec<Chunk> {
    let mut cutter = Cutter::default();
    cutter.advance(data, true, layout, cancel);
    cutter.chunks
}

/// [`swf_chunks`] on bytes that arrive a block at a time: [`advance`](Self::advance)
/// cuts and parses what the bytes so far decide. A cut it makes before the end is one the
/// whole bytes make too: it waits while the line it needs (the header line it looks at,
/// the line end past `start + chunk_bytes`) is not complete, and bytes only ever come
/// after the ones it has.
#[derive(Default)]
struct Cutter {
    /// Where the walk is: in the header block, or at the next chunk's start.
    pos: usize,
    body: bool,
    chunks: Vec<Chunk>,
}

impl Cutter {
    /// Cut and parse as far as `data` decides; `whole`: `data` is all the bytes.
    fn advance(&mut self, data: &[u8], whole: bool, layout: &Layout, cancel: &AtomicBool) {
        let n = data.len();
        if !self.body {
            if self.pos == 0 {
                if n < 3 && !whole {
                    return; // a byte-order mark not complete yet
                }
                if data.starts_with(b"\xef\xbb\xbf") {
                    self.pos = 3;
                }
            }
            loop {
                if self.pos >= n {
                    return; // no body yet (or, when whole, none)
                }
                let end = line_end(data, self.pos);
                if end == n && !whole && data[n - 1] != b'\n' {
                    return; // the line is not complete yet
                }
                let first = data[self.pos..end].iter().find(|&&b| !is_py_space(b));
                if first.is_some_and(|&b| b != b';') {
                    break;
                }
                self.pos = end;
            }
            self.body = true;
        }
        while self.pos < n && !cancel.load(Ordering::Relaxed) {
            let target = self.pos.saturating_add(layout.chunk_bytes).min(n);
            let end = line_end(data, target);
            if !whole && (target == n || (end == n && data[n - 1] != b'\n')) {
                return; // the chunk's end depends on bytes still to come
            }
            let parsed = parse_plain(&data[self.pos..end], &layout.used, layout.n_fields, layout.max_digits);
            self.chunks.push(Chunk { start: self.pos, end, parsed });
            self.pos = end;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn layout(chunk_bytes: usize) -> Layout {
        Layout { chunk_bytes, used: vec![0, 2], n_fields: 3, max_digits: 18, inflate_bytes: 5 }
    }

    fn gz(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn chunks_start_after_the_header_block_and_end_at_line_ends() {
        let data = b"\xef\xbb\xbf; a: 1\n\n \x0b\n;b\n1 2 3\n4 5 6\n7 8 9";
        // 7 bytes on from 17, the first chunk ends at the next line end: 29
        let chunks = swf_chunks(data, &layout(7), &AtomicBool::new(false));
        let body = data.len() - b"1 2 3\n4 5 6\n7 8 9".len();
        let bounds: Vec<(usize, usize)> = chunks.iter().map(|c| (c.start, c.end)).collect();
        assert_eq!(bounds, vec![(body, body + 12), (body + 12, data.len())]);
        assert_eq!(chunks[0].parsed.as_ref().unwrap().0, vec![1, 3, 4, 6]);
        assert!(swf_chunks(data, &layout(7), &AtomicBool::new(true)).is_empty());
    }

    #[test]
    fn multi_member_gzip_inflates_every_member_and_bad_data_is_declined() {
        let mut two = gz(b"1 2 3\n");
        two.extend(gz(b"4 5 6\n"));
        assert_eq!(gunzip(&two).unwrap(), b"1 2 3\n4 5 6\n");
        assert!(gunzip(&two[..two.len() - 1]).is_none());
        let mut bad = two.clone();
        bad[12] ^= 0xff;
        assert!(gunzip(&bad).is_none());
    }

    /// The bytes arriving in blocks of any size give the chunks of the whole bytes.
    #[test]
    fn chunks_cut_as_the_bytes_arrive_are_the_whole_bytes_chunks() {
        let logs: [&[u8]; 5] = [
            b"\xef\xbb\xbf; a: 1\n\n \x0b\n;b\n1 2 3\n4 5 6\n7 8 9",
            b"; only a header\n;\n",
            b"1 2 3\n44 55 66\n\n7 8 9\n10 11 12\n",
            b"\xef\xbb",
            b"  \n; x\n1 2 3",
        ];
        for data in logs {
            for chunk_bytes in [1, 4, 7, 100] {
                let l = layout(chunk_bytes);
                let whole: Vec<_> = swf_chunks(data, &l, &AtomicBool::new(false)).into_iter().map(|c| (c.start, c.end, c.parsed)).collect();
                for block in 1..=data.len().max(1) {
                    let mut cutter = Cutter::default();
                    let mut got = Vec::new();
                    for piece in data.chunks(block) {
                        got.extend_from_slice(piece);
                        cutter.advance(&got, false, &l, &AtomicBool::new(false));
                        // a chunk cut early is cut where the whole bytes cut it
                        for (c, w) in cutter.chunks.iter().zip(&whole) {
                            assert_eq!((c.start, c.end), (w.0, w.1));
                        }
                    }
                    cutter.advance(&got, true, &l, &AtomicBool::new(false));
                    let cut: Vec<_> = cutter.chunks.into_iter().map(|c| (c.start, c.end, c.parsed)).collect();
                    assert_eq!(cut, whole, "block {block}, chunk {chunk_bytes}");
                }
            }
        }
    }

    #[test]
    fn gzip_blocks_are_the_inflated_bytes() {
        let data: Vec<u8> = (0..5000u32).flat_map(|i| format!("{i} {} 3\n", i * 7).into_bytes()).collect();
        let mut two = gz(&data[..1234]);
        two.extend(gz(&data[1234..]));
        for block in [1, 5, 4096, 1 << 20] {
            let (tx, rx) = std::sync::mpsc::sync_channel(1 << 16);
            assert!(gunzip_blocks(&two, block, &tx, &AtomicBool::new(false)));
            drop(tx);
            assert_eq!(rx.iter().flatten().collect::<Vec<u8>>(), data);
            let (tx, _rx) = std::sync::mpsc::sync_channel(1 << 16);
            assert!(!gunzip_blocks(&two[..two.len() - 1], block, &tx, &AtomicBool::new(false)));
        }
    }

    #[test]
    fn only_lone_carriage_returns_need_the_repair() {
        assert!(!needs_cr_repair(b"1 2 3\r\n4 5 6\r\n"));
        assert!(needs_cr_repair(b"1 2 3\r4 5 6\r\n"));
        assert!(!needs_cr_repair(b""));
        assert!(needs_cr_repair(b"\r"));
        assert!(!needs_cr_repair(b"\r\n\r\n"));
        assert!(needs_cr_repair(b"\r\r\n"));
    }
}
