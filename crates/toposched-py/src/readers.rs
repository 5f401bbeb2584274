//! Fast paths of the log readers. Only the parsing of plain text into integers lives
//! here; every rule about what a record means, every error message and every repair count
//! stays in the Python readers (`toposched.workload.swf`), which fall back to their own
//! paths whenever this one declines a chunk.

use numpy::PyArray1;
use pyo3::prelude::*;

/// Integer values of the kept fields of a chunk of plain SWF lines, or None when the
/// chunk is anything but plain: exactly what `swf._fast_chunk_numpy` accepts and
/// computes (the Python tests compare the two on every kind of line).
///
/// Plain means: only the bytes `0-9 - . space tab CR LF`; every non-blank line holds
/// exactly `n_fields` tokens; a token is `-?digits(.digits*)?` ('-' only first and
/// followed by a digit, '.' after a digit and at most once); a kept field has at most
/// `max_digits` integer digits and nothing but zeros after its '.'.
///
/// Returns (values, line index of each record within the chunk, lines in the chunk):
/// `values` holds `len(used)` integers per record, records in file order.
#[pyfunction]
#[allow(clippy::type_complexity)]
pub fn swf_plain_chunk<'py>(
    py: Python<'py>,
    chunk: &[u8],
    used: Vec<usize>,
    n_fields: usize,
    max_digits: usize,
) -> PyResult<Option<(Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<i64>>, usize)>> {
    let parsed = py.allow_threads(|| parse_plain(chunk, &used, n_fields, max_digits));
    Ok(parsed.map(|(values, lines, n_lines)| (PyArray1::from_vec(py, values), PyArray1::from_vec(py, lines), n_lines)))
}

fn is_blank(b: u8) -> bool {
    b <= b' '
}

fn parse_plain(chunk: &[u8], used: &[usize], n_fields: usize, max_digits: usize) -> Option<(Vec<i64>, Vec<i64>, usize)> {
    if chunk.len() >= (1 << 31) - 2 {
        return None;
    }
    if !chunk.iter().all(|&b| b.is_ascii_digit() || matches!(b, b'-' | b'.' | b' ' | b'\t' | b'\r' | b'\n')) {
        return None;
    }
    let mut keep = vec![false; n_fields];
    for &u in used {
        if u >= n_fields {
            return None;
        }
        keep[u] = true;
    }
    let n_lines = chunk.iter().filter(|&&b| b == b'\n').count() + usize::from(!chunk.ends_with(b"\n"));
    let mut values: Vec<i64> = Vec::with_capacity(chunk.len() / 8);
    let mut lines: Vec<i64> = Vec::with_capacity(chunk.len() / 64);
    let mut row = vec![0i64; n_fields];
    for (line_index, line) in chunk.split(|&b| b == b'\n').enumerate() {
        let mut field = 0usize;
        let mut i = 0usize;
        while i < line.len() {
            if is_blank(line[i]) {
                i += 1;
                continue;
            }
            let start = i;
            while i < line.len() && !is_blank(line[i]) {
                i += 1;
            }
            if field >= n_fields {
                return None; // more tokens than fields
            }
            row[field] = token_value(&line[start..i], keep[field], max_digits)?;
            field += 1;
        }
        if field == 0 {
            continue; // a blank line
        }
        if field != n_fields {
            return None;
        }
        values.extend(used.iter().map(|&u| row[u]));
        lines.push(line_index as i64);
    }
    Some((values, lines, n_lines))
}

/// The integer value of one token (0 for a field not kept, once its syntax is checked).
fn token_value(tok: &[u8], kept: bool, max_digits: usize) -> Option<i64> {
    let neg = tok[0] == b'-';
    let digits_from = usize::from(neg);
    if neg && !tok.get(1).is_some_and(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut int_end = tok.len();
    for (k, &b) in tok.iter().enumerate().skip(digits_from) {
        match b {
            b'-' => return None,
            b'.' => {
                if int_end != tok.len() || k == 0 || !tok[k - 1].is_ascii_digit() {
                    return None; // a second '.', or one not after a digit
                }
                int_end = k;
            }
            _ => {}
        }
    }
    if !kept {
        return Some(0);
    }
    if int_end < tok.len() && tok[int_end + 1..].iter().any(|&b| b != b'0') {
        return None; // a fraction: the slow path reports it
    }
    let digits = &tok[digits_from..int_end];
    if digits.len() > max_digits || max_digits > 18 {
        return None;
    }
    let mut v: i64 = 0;
    for &d in digits {
        v = v * 10 + i64::from(d - b'0');
    }
    Some(if neg { -v } else { v })
}
