//! `SharedList`: a list of objects that views share, held in runs (chunks) that lists share
//! in turn.
//!
//! A source hands out its cached list, and a view (or a copy of one) costs one pointer however
//! many objects it holds. When a few objects change, the source's next list shares every run
//! that did not change with the last one (one pointer each) and copies only the runs that did:
//! at 100,000 pods, copying the whole list of `Arc`s and letting the old one go (an atomic count
//! on every pod each way, each a cache miss) was a tenth of a simulated day. A reader that kept
//! the last list (the kept sorting of the pods) tells unchanged runs by address and reads only
//! the others. Editing a list (tests, `plan`'s reader) copies what it changes first
//! (copy-on-write), so no other list changes.

use std::fmt;
use std::ops::{Index, IndexMut};
use std::sync::Arc;

/// How many objects a run holds when a list is cut into runs: small enough that a change copies
/// little, large enough that walking the runs costs nothing next to walking the objects. (A
/// changed run is copied, and the readers that compare lists by run read its objects again:
/// at 100,000 pods, runs of 256 made bringing the memory cluster's list up to date nearly
/// twice as dear as runs of 64, which leave about 1,600 runs to walk.) The crate's unit tests
/// cut lists of a few objects into several runs.
#[cfg(not(test))]
pub const RUN_LENGTH: usize = 64;
#[cfg(test)]
pub const RUN_LENGTH: usize = 4;

/// A run is cut in two when it grows past this (objects added inside it).
const LONGEST_RUN: usize = 2 * RUN_LENGTH;

/// One run of a list: the same `Arc` in every list that did not change inside it.
pub type Run<T> = Arc<Vec<Arc<T>>>;

pub struct SharedList<T> {
    /// Never an empty run.
    runs: Arc<Vec<Run<T>>>,
    /// Where each run starts in the list (for indexing), one per run.
    starts: Arc<Vec<usize>>,
    len: usize,
}

/// The objects of a list, in order.
pub type Iter<'a, T> = std::iter::FlatMap<
    std::slice::Iter<'a, Run<T>>,
    std::slice::Iter<'a, Arc<T>>,
    fn(&'a Run<T>) -> std::slice::Iter<'a, Arc<T>>,
>;

fn run_iter<T>(run: &Run<T>) -> std::slice::Iter<'_, Arc<T>> {
    run.iter()
}

impl<T> SharedList<T> {
    /// A list of these runs (empty ones left out).
    pub fn from_runs(runs: Vec<Run<T>>) -> Self {
        let runs: Vec<Run<T>> = runs.into_iter().filter(|r| !r.is_empty()).collect();
        let mut starts = Vec::with_capacity(runs.len());
        let mut len = 0usize;
        for run in &runs {
            starts.push(len);
            len += run.len();
        }
        SharedList { runs: Arc::new(runs), starts: Arc::new(starts), len }
    }

    /// Whether both are the very same list (not only equal ones): nothing in it changed. A
    /// holder that edits a list shared with another gets its own copy first, so a list kept
    /// for comparison (the kept sorting of the pods) never changes under its keeper.
    pub fn same_list(&self, other: &SharedList<T>) -> bool {
        Arc::ptr_eq(&self.runs, &other.runs)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn iter(&self) -> Iter<'_, T> {
        self.runs.iter().flat_map(run_iter as fn(&Run<T>) -> std::slice::Iter<'_, Arc<T>>)
    }

    /// The runs, in order (none empty).
    pub fn runs(&self) -> &[Run<T>] {
        &self.runs
    }

    /// Where run `run` starts in the list; the list's length for the index past the last run.
    pub fn run_start(&self, run: usize) -> usize {
        self.starts.get(run).copied().unwrap_or(self.len)
    }

    pub fn get(&self, at: usize) -> Option<&Arc<T>> {
        let (run, offset) = self.place(at)?;
        self.runs[run].get(offset)
    }

    pub fn to_vec(&self) -> Vec<Arc<T>> {
        let mut all = Vec::with_capacity(self.len);
        for run in self.runs.iter() {
            all.extend_from_slice(run);
        }
        all
    }

    /// The run holding position `at`, and the position inside it.
    fn place(&self, at: usize) -> Option<(usize, usize)> {
        if at >= self.len {
            return None;
        }
        let run = self.starts.partition_point(|&start| start <= at) - 1;
        Some((run, at - self.starts[run]))
    }

    /// Edits the list as a `Vec` (copying it whole: for tests and readers that build a list,
    /// not for the loop), then cuts it into runs again.
    pub fn edit<R>(&mut self, edit: impl FnOnce(&mut Vec<Arc<T>>) -> R) -> R {
        let mut all = self.to_vec();
        let result = edit(&mut all);
        *self = SharedList::from(all);
        result
    }

    pub fn push(&mut self, object: Arc<T>) {
        let runs = Arc::make_mut(&mut self.runs);
        match runs.last_mut() {
            Some(last) if last.len() < RUN_LENGTH => Arc::make_mut(last).push(object),
            _ => {
                Arc::make_mut(&mut self.starts).push(self.len);
                runs.push(Arc::new(vec![object]));
            }
        }
        self.len += 1;
    }

    pub fn retain(&mut self, keep: impl FnMut(&Arc<T>) -> bool) {
        self.edit(|all| all.retain(keep));
    }

    /// Puts `object` at `at` (up to the length), inside the run holding that place: the other
    /// runs stay shared.
    pub fn insert(&mut self, at: usize, object: Arc<T>) {
        let Some((run, offset)) = self.place(at) else {
            assert!(at == self.len, "insertion index {at} past a list of {}", self.len);
            return self.push(object);
        };
        Arc::make_mut(&mut Arc::make_mut(&mut self.runs)[run]).insert(offset, object);
        self.shift_starts_from(run + 1, true);
    }

    /// Takes out the object at `at`; the other runs stay shared.
    pub fn remove(&mut self, at: usize) -> Arc<T> {
        let Some((run, offset)) = self.place(at) else { panic!("removal index {at} out of a list of {}", self.len) };
        let runs = Arc::make_mut(&mut self.runs);
        let removed = Arc::make_mut(&mut runs[run]).remove(offset);
        if runs[run].is_empty() {
            // No empty run: the next one takes its index.
            runs.remove(run);
            Arc::make_mut(&mut self.starts).remove(run);
            self.shift_starts_from(run, false);
        } else {
            self.shift_starts_from(run + 1, false);
        }
        removed
    }

    pub fn swap(&mut self, a: usize, b: usize) {
        let (first, second) = (self[a].clone(), self[b].clone());
        self[a] = second;
        self[b] = first;
    }

    /// The runs from index `first` on start one later (or earlier); the length follows.
    fn shift_starts_from(&mut self, first: usize, grew: bool) {
        let starts = Arc::make_mut(&mut self.starts);
        for start in starts.iter_mut().skip(first) {
            *start = if grew { *start + 1 } else { *start - 1 };
        }
        self.len = if grew { self.len + 1 } else { self.len - 1 };
    }
}

/// Cuts a run that grew too long into runs of `RUN_LENGTH` (the last one may be shorter); a
/// run of normal length is kept as it is.
pub fn cut_run<T>(run: Vec<Arc<T>>, into: &mut Vec<Run<T>>) {
    if run.len() <= LONGEST_RUN {
        into.push(Arc::new(run));
    } else {
        into.extend(runs_of(run));
    }
}

/// The objects moved into runs of `RUN_LENGTH` (no count of theirs touched).
fn runs_of<T>(objects: impl IntoIterator<Item = Arc<T>>) -> impl Iterator<Item = Run<T>> {
    let mut objects = objects.into_iter().peekable();
    std::iter::from_fn(move || {
        objects.peek()?;
        Some(Arc::new(objects.by_ref().take(RUN_LENGTH).collect()))
    })
}

impl<T> Clone for SharedList<T> {
    fn clone(&self) -> Self {
        SharedList { runs: Arc::clone(&self.runs), starts: Arc::clone(&self.starts), len: self.len }
    }
}

impl<T> Default for SharedList<T> {
    fn default() -> Self {
        SharedList::from_runs(Vec::new())
    }
}

impl<T: fmt::Debug> fmt::Debug for SharedList<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<T> Index<usize> for SharedList<T> {
    type Output = Arc<T>;

    fn index(&self, at: usize) -> &Arc<T> {
        match self.get(at) {
            Some(object) => object,
            None => panic!("index {at} out of a list of {}", self.len),
        }
    }
}

impl<T> IndexMut<usize> for SharedList<T> {
    /// Copies the run holding `at` (and the list of runs) first when another list shares them.
    fn index_mut(&mut self, at: usize) -> &mut Arc<T> {
        let Some((run, offset)) = self.place(at) else { panic!("index {at} out of a list of {}", self.len) };
        &mut Arc::make_mut(&mut Arc::make_mut(&mut self.runs)[run])[offset]
    }
}

impl<T> From<Vec<Arc<T>>> for SharedList<T> {
    fn from(all: Vec<Arc<T>>) -> Self {
        all.into_iter().collect()
    }
}

impl<T> FromIterator<Arc<T>> for SharedList<T> {
    fn from_iter<I: IntoIterator<Item = Arc<T>>>(items: I) -> Self {
        SharedList::from_runs(runs_of(items).collect())
    }
}

impl<'a, T> IntoIterator for &'a SharedList<T> {
    type Item = &'a Arc<T>;
    type IntoIter = Iter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(n: usize) -> SharedList<usize> {
        (0..n).map(Arc::new).collect()
    }

    fn values(l: &SharedList<usize>) -> Vec<usize> {
        l.iter().map(|v| **v).collect()
    }

    #[test]
    fn a_list_is_cut_into_runs_and_read_in_order() {
        let l = list(RUN_LENGTH * 2 + 3);
        assert_eq!(l.runs().len(), 3);
        assert_eq!(l.len(), RUN_LENGTH * 2 + 3);
        assert_eq!(values(&l), (0..RUN_LENGTH * 2 + 3).collect::<Vec<_>>());
        for at in [0, RUN_LENGTH - 1, RUN_LENGTH, RUN_LENGTH * 2 + 2] {
            assert_eq!(*l[at], at);
        }
        assert!(l.get(RUN_LENGTH * 2 + 3).is_none());
        let starts: Vec<usize> = (0..=l.runs().len()).map(|r| l.run_start(r)).collect();
        assert_eq!(starts, [0, RUN_LENGTH, RUN_LENGTH * 2, RUN_LENGTH * 2 + 3]);
        assert!(SharedList::<usize>::default().is_empty());
        assert!(SharedList::<usize>::from_runs(vec![Arc::new(Vec::new())]).runs().is_empty(), "no empty run");
    }

    #[test]
    fn an_edit_copies_only_what_it_changes() {
        let original = list(RUN_LENGTH * 3);
        let mut edited = original.clone();
        assert!(edited.same_list(&original));
        edited[RUN_LENGTH + 1] = Arc::new(1000);
        assert!(!edited.same_list(&original));
        assert_eq!(*original[RUN_LENGTH + 1], RUN_LENGTH + 1, "the original list is unchanged");
        assert_eq!(*edited[RUN_LENGTH + 1], 1000);
        let shared: Vec<bool> = original.runs().iter().zip(edited.runs()).map(|(a, b)| Arc::ptr_eq(a, b)).collect();
        assert_eq!(shared, [true, false, true], "the runs not edited are shared");

        edited.push(Arc::new(7));
        edited.retain(|v| **v != 0);
        assert_eq!(edited.len(), RUN_LENGTH * 3);
        assert_eq!(*edited.remove(0), 1);
        assert_eq!(*edited[edited.len() - 1], 7);
        assert_eq!(original.len(), RUN_LENGTH * 3);
    }

    #[test]
    fn a_long_run_is_cut() {
        let mut runs = Vec::new();
        cut_run((0..LONGEST_RUN).map(Arc::new).collect(), &mut runs);
        assert_eq!(runs.len(), 1, "a run up to the longest is kept whole");
        cut_run((0..LONGEST_RUN + 1).map(Arc::new).collect(), &mut runs);
        assert_eq!(runs.iter().map(|r| r.len()).collect::<Vec<_>>(), [LONGEST_RUN, RUN_LENGTH, RUN_LENGTH, 1]);
    }
}
