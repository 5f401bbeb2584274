//! Fast paths of the log readers. Only the parsing of plain text into integers lives
//! here; every rule about what a record means, every error message and every repair count
//! stays in the Python readers (`toposched.workload.swf`), which fall back to their own
//! paths whenever this one declines a chunk.

use numpy::PyArray1;
use pyo3::prelude::*;

/// Integer values of the kept fields of a chunk of plain SWF lines, or None when the
/// chunk is anything but plain: exactly what the NumPy parser it replaced accepts and
/// computes (tests/swf_numpy_reference.py; tests/test_swf_native.py compares the two on
/// every kind of line).
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
    crate::numpy_api(py)?;
    let parsed = py.allow_threads(|| parse_plain(chunk, &used, n_fields, max_digits));
    Ok(parsed.map(|(values, lines, n_lines)| (PyArray1::from_vec(py, values), PyArray1::from_vec(py, lines), n_lines)))
}

/// A separator inside a line (the only bytes at or below ' ' that a plain chunk holds
/// besides '\n').
fn is_blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r')
}

/// One pass over the chunk: bytes are checked, tokens cut and converted as they are met
/// (three passes and a second look at every token before: 130 MB/s on HPC2N). Declines
/// exactly what the rules above decline; any decline is `None`, so the order in which
/// rules are found broken does not matter.
pub(crate) fn parse_plain(chunk: &[u8], used: &[usize], n_fields: usize, max_digits: usize) -> Option<(Vec<i64>, Vec<i64>, usize)> {
    if chunk.len() >= (1 << 31) - 2 {
        return None;
    }
    let mut keep = vec![false; n_fields];
    for &u in used {
        if u >= n_fields {
            return None;
        }
        keep[u] = true;
    }
    let digits_ok = max_digits <= 18; // beyond, a kept value might not fit: declined
    let mut values: Vec<i64> = Vec::with_capacity(chunk.len() / 8);
    let mut lines: Vec<i64> = Vec::with_capacity(chunk.len() / 64);
    let mut row = vec![0i64; n_fields];
    let n = chunk.len();
    let mut line_index = 0usize;
    let mut field = 0usize;
    let mut i = 0usize;
    loop {
        let b = if i < n { chunk[i] } else { b'\n' }; // the end closes the last line
        if b == b'\n' {
            if field != 0 {
                if field != n_fields {
                    return None;
                }
                values.extend(used.iter().map(|&u| row[u]));
                lines.push(line_index as i64);
                field = 0;
            }
            if i >= n {
                break;
            }
            line_index += 1;
            i += 1;
            continue;
        }
        if is_blank(b) {
            i += 1;
            continue;
        }
        // a token: -?digits(.digits*)? followed by a blank, a line end or the chunk's end
        if field >= n_fields {
            return None; // more tokens than fields
        }
        let kept = keep[field];
        let neg = b == b'-';
        if neg {
            i += 1;
        }
        let digits_from = i;
        let mut v: i64 = 0;
        while i < n && chunk[i].is_ascii_digit() {
            v = v.wrapping_mul(10).wrapping_add(i64::from(chunk[i] - b'0'));
            i += 1;
        }
        let n_digits = i - digits_from;
        if n_digits == 0 {
            return None; // '-' not followed by a digit, a '.' first, or a byte not allowed
        }
        if i < n && chunk[i] == b'.' {
            i += 1;
            while i < n && chunk[i].is_ascii_digit() {
                if kept && chunk[i] != b'0' {
                    return None; // a fraction: the slow path reports it
                }
                i += 1;
            }
        }
        if i < n && chunk[i] != b'\n' && !is_blank(chunk[i]) {
            return None; // a second '.', a '-' inside, or a byte not allowed
        }
        row[field] = if !kept {
            0
        } else if !digits_ok || n_digits > max_digits {
            return None;
        } else if neg {
            -v
        } else {
            v
        };
        field += 1;
    }
    let n_lines = line_index + usize::from(!chunk.ends_with(b"\n"));
    Some((values, lines, n_lines))
}

#[cfg(test)]
mod tests {
    use super::parse_plain;

    const USED: [usize; 2] = [0, 2];

    #[test]
    fn plain_lines_give_their_kept_values_and_line_indices() {
        let (values, lines, n) = parse_plain(b"1 2 3\n\n  -4 5.5 6.00\r\n7 8 9", &USED, 3, 18).unwrap();
        assert_eq!(values, vec![1, 3, -4, 6, 7, 9]);
        assert_eq!(lines, vec![0, 2, 3]);
        assert_eq!(n, 4);
        assert_eq!(parse_plain(b"", &USED, 3, 18).unwrap().2, 1); // as the NumPy path counts
        assert_eq!(parse_plain(b"1 2 3\n", &USED, 3, 18).unwrap().2, 1);
    }

    #[test]
    fn anything_but_plain_is_declined() {
        for bad in [
            &b"1 2\n"[..],
            b"1 2 3 4\n",
            b"1 2 3.5\n",
            b"1 .2 3\n",
            b"1 2 -\n",
            b"1 2 1-2\n",
            b"1 2 1.2.3\n",
            b"1 2 --1\n",
            b"1 2 3a\n",
            b"1 2 1e3\n",
            b"; comment\n",
            b"1 2 3\x0c\n",
            b"1 2 1234567890123456789\n",
        ] {
            assert!(parse_plain(bad, &USED, 3, 18).is_none(), "{:?}", String::from_utf8_lossy(bad));
        }
        // a fraction, a long number or a stray '.' in a field not kept is only checked
        assert_eq!(parse_plain(b"1 2.5 3\n", &USED, 3, 18).unwrap().0, vec![1, 3]);
        assert_eq!(parse_plain(b"1 12345678901234567890 3\n", &USED, 3, 18).unwrap().0, vec![1, 3]);
        assert_eq!(parse_plain(b"1 5. 3.\n", &USED, 3, 18).unwrap().0, vec![1, 3]); // "3." is 3
        assert!(parse_plain(b"1 2 3\n", &USED, 3, 19).is_none());
        assert!(parse_plain(b"1 2 3\n", &[0, 3], 3, 18).is_none());
    }
}
