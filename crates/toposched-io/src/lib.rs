//! What surrounds the replay, in Rust so that a plain run needs neither NumPy nor PyArrow
//! (issue 17, point 1; BENCHMARKS.md 1e): the log's raw columns normalized into the job
//! table (the rules of `toposched.workload.normalize`), the finished jobs' table and the
//! summary's statistics collected from a replay, and the result's Parquet files written.
//! The Python package calls the same code through `toposched._core` (one implementation:
//! the Python API and the command line write the same bytes). No PyO3 here.

pub mod limits;
pub mod normalize;
pub mod exact;
pub mod summary;
pub mod collect;
pub mod utilization;
pub mod parquet;
