//! `RowVec<T>`: a per-row vector addressed by absolute job row, holding only a window of
//! rows. Rows are appended at the back and a finished prefix is dropped from the front
//! (streamed replays, `Engine::append` / `Engine::drain`); indexing stays by absolute row,
//! so `ctx.jobs[row as usize]` reads the same whether or not earlier rows were dropped.
//!
//! Stored as one `Vec` with the absolute row of its first element (`base`): indexing is one
//! subtraction and one bounds check (a dropped row, below `base`, wraps to an index past
//! the end), as cheap as the plain `Vec` it replaces; the rows held are one contiguous
//! slice. Dropping a prefix moves the window's rows to the front (O(window)): the engine
//! drops once per drain, a chunk of rows at a time, and already walks the window then.

use std::ops::{Index, IndexMut};

#[derive(Clone, Debug)]
pub struct RowVec<T> {
    /// Absolute row of `v[0]`: the first row held.
    base: usize,
    v: Vec<T>,
}

impl<T> Default for RowVec<T> {
    fn default() -> Self {
        RowVec { base: 0, v: Vec::new() }
    }
}

impl<T> RowVec<T> {
    pub fn new() -> RowVec<T> {
        RowVec::default()
    }
    /// Rows 0 .. v.len().
    pub fn from_vec(v: Vec<T>) -> RowVec<T> {
        RowVec { base: 0, v }
    }
    /// First row held (the oldest not dropped).
    #[inline]
    pub fn first_row(&self) -> usize {
        self.base
    }
    /// One past the last row appended: the row the next `push` gets. Not the number of rows
    /// held (that is [`held`](Self::held)): a policy sizing its own per-row table by it keeps
    /// working after a prefix was dropped.
    #[inline]
    pub fn len(&self) -> usize {
        self.base + self.v.len()
    }
    /// No row was ever appended.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Rows held now (the window).
    pub fn held(&self) -> usize {
        self.v.len()
    }
    /// `row` is in the window.
    #[inline]
    pub fn contains(&self, row: usize) -> bool {
        row.wrapping_sub(self.base) < self.v.len()
    }
    #[inline]
    pub fn get(&self, row: usize) -> Option<&T> {
        self.v.get(row.wrapping_sub(self.base))
    }
    #[inline]
    pub fn get_mut(&mut self, row: usize) -> Option<&mut T> {
        self.v.get_mut(row.wrapping_sub(self.base))
    }
    #[inline]
    pub fn push(&mut self, x: T) {
        self.v.push(x);
    }
    pub fn extend(&mut self, xs: impl IntoIterator<Item = T>) {
        self.v.extend(xs);
    }
    /// The window's rows, from [`first_row`](Self::first_row).
    pub fn as_slice(&self) -> &[T] {
        &self.v
    }
    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.v.iter()
    }
    /// Drop every row before `row` (no-op for rows already dropped). Panics past the end.
    pub fn drop_before(&mut self, row: usize) {
        if row <= self.base {
            return;
        }
        assert!(row <= self.len(), "drop_before row {row}, only {} rows appended", self.len());
        self.v.drain(..row - self.base);
        self.base = row;
    }
}

/// A read-only view of a [`RowVec`]'s window, by absolute row: what a queue policy gets as
/// `PassCtx::jobs`. Copy, and held by value (the window's slice and its first row), so an
/// index costs what a slice's does plus one subtraction, with no pointer to chase.
#[derive(Debug)]
pub struct Rows<'a, T> {
    base: usize,
    rows: &'a [T],
}

impl<T> Clone for Rows<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Rows<'_, T> {}

impl<'a, T> Rows<'a, T> {
    /// Rows `first_row ..` of `rows`.
    pub fn new(first_row: usize, rows: &'a [T]) -> Rows<'a, T> {
        Rows { base: first_row, rows }
    }
    /// First row held.
    #[inline]
    pub fn first_row(&self) -> usize {
        self.base
    }
    /// One past the last row (see [`RowVec::len`]).
    #[inline]
    pub fn len(&self) -> usize {
        self.base + self.rows.len()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    #[inline]
    pub fn get(&self, row: usize) -> Option<&'a T> {
        self.rows.get(row.wrapping_sub(self.base))
    }
    /// The window's rows, from [`first_row`](Self::first_row).
    pub fn as_slice(&self) -> &'a [T] {
        self.rows
    }
    pub fn iter(&self) -> std::slice::Iter<'a, T> {
        self.rows.iter()
    }
}

impl<T> Index<usize> for Rows<'_, T> {
    type Output = T;
    #[inline]
    fn index(&self, row: usize) -> &T {
        debug_assert!(row >= self.base, "row {row} was dropped (the window starts at {})", self.base);
        &self.rows[row.wrapping_sub(self.base)]
    }
}

impl<T> RowVec<T> {
    /// The window as a [`Rows`] view.
    #[inline]
    pub fn view(&self) -> Rows<'_, T> {
        Rows { base: self.base, rows: &self.v }
    }
}

impl<T> Index<usize> for RowVec<T> {
    type Output = T;
    #[inline]
    fn index(&self, row: usize) -> &T {
        debug_assert!(row >= self.base, "row {row} was dropped (the window starts at {})", self.base);
        &self.v[row.wrapping_sub(self.base)]
    }
}

impl<T> IndexMut<usize> for RowVec<T> {
    #[inline]
    fn index_mut(&mut self, row: usize) -> &mut T {
        debug_assert!(row >= self.base, "row {row} was dropped (the window starts at {})", self.base);
        &mut self.v[row.wrapping_sub(self.base)]
    }
}

impl<'a, T> IntoIterator for &'a RowVec<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::RowVec;

    #[test]
    fn absolute_rows_survive_dropping() {
        let mut r = RowVec::from_vec((0..10).collect::<Vec<u32>>());
        r.drop_before(3);
        assert_eq!((r.first_row(), r.len(), r.held()), (3, 10, 7));
        assert_eq!(r[3], 3);
        assert_eq!(r[9], 9);
        assert_eq!(r.get(2), None);
        r.drop_before(7);
        assert_eq!(r.as_slice(), &[7, 8, 9]);
        r.push(10);
        r[10] += 5;
        assert_eq!((r[10], r.len(), r.held(), r.first_row()), (15, 11, 4, 7));
        r.drop_before(2); // already dropped: nothing
        assert_eq!(r.first_row(), 7);
        r.drop_before(11);
        assert_eq!((r.held(), r.len(), r.get(10)), (0, 11, None));
    }
}
