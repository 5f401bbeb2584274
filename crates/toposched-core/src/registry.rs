//! The policy registry: one entry per policy file, collected by `build.rs`.
//!
//! Every file of `src/alloc/` and `src/queue/` (but `mod.rs`) declares `pub static POLICY`:
//! its CLI name, a one-line summary, its flags, the JSON schema of its options (an options
//! struct deriving serde's `Deserialize` and schemars' `JsonSchema`, so that the field doc
//! comments are the option documentation) and a builder from a JSON object of options. The
//! long documentation is the file's `//!` comment. The Python binding exposes the registry
//! as `_core.policies()`; the CLI flags, the sweep/compare validation and the catalogue in
//! docs/policies.md are generated from it.
//!
//! Options live in one flat namespace: an option name belongs to exactly one policy (tested),
//! so `{"leaf_order": "paper"}` needs no policy prefix and maps to the CLI flag `--leaf-order`.

use crate::alloc::Allocator;
pub use crate::alloc::AllocEntry;
pub use crate::options::{option_names, parse_options, schema_of, NoOptions, Options, Registered};
use crate::queue::QueuePolicy;
pub use crate::queue::QueueEntry;

/// Every allocation policy, in file-name order.
pub fn allocs() -> &'static [Registered<AllocEntry>] {
    crate::alloc::REGISTERED
}

/// Every queue policy, in file-name order.
pub fn queues() -> &'static [Registered<QueueEntry>] {
    crate::queue::REGISTERED
}

pub fn alloc(name: &str) -> Option<&'static AllocEntry> {
    allocs().iter().map(|r| r.policy).find(|p| p.name == name)
}

pub fn queue(name: &str) -> Option<&'static QueueEntry> {
    queues().iter().map(|r| r.policy).find(|p| p.name == name)
}

pub fn alloc_names() -> Vec<&'static str> {
    allocs().iter().map(|r| r.policy.name).collect()
}

pub fn queue_names() -> Vec<&'static str> {
    queues().iter().map(|r| r.policy.name).collect()
}

/// Which policy declares option `name`: `("alloc" | "queue", policy name)`.
pub fn owner_of(name: &str) -> Option<(&'static str, &'static str)> {
    for r in allocs() {
        if option_names(&(r.policy.options)()).iter().any(|o| o == name) {
            return Some(("alloc", r.policy.name));
        }
    }
    for r in queues() {
        if option_names(&(r.policy.options)()).iter().any(|o| o == name) {
            return Some(("queue", r.policy.name));
        }
    }
    None
}

/// The policies of a run: the queue policy, and the allocation policy unless it is not a
/// registered one.
pub type BuiltPolicies = (Box<dyn QueuePolicy>, Option<Box<dyn Allocator>>);

/// Build the queue and allocation policies of a run from one flat options object. Each
/// option goes to the policy that declares it; an option of a policy the run does not use,
/// or of none, is an error naming its owner. `alloc` None means the allocation policy is
/// not a registered one (a policy written in Python): then no allocation option may be given.
pub fn build(queue: &str, alloc: Option<&str>, options: &Options) -> Result<BuiltPolicies, String> {
    // `slurm:ticks_per_s=1000`: a queue policy's options given with its name
    let (queue, options) = crate::options::split_params(queue, options)?;
    let (queue, options) = (queue.as_str(), &options);
    let q = self::queue(queue).ok_or_else(|| format!("unknown queue policy {queue:?}; built-ins are: {}", queue_names().join(", ")))?;
    let a = match alloc {
        Some(name) => Some(self::alloc(name).ok_or_else(|| {
            format!("unknown allocation policy {name:?}; built-ins are: {}", alloc_names().join(", "))
        })?),
        None => None,
    };
    let (mut q_opts, mut a_opts) = (Options::new(), Options::new());
    for (key, value) in options {
        match owner_of(key) {
            Some(("queue", owner)) if owner == q.name => {
                q_opts.insert(key.clone(), value.clone());
            }
            Some(("alloc", owner)) if a.is_some_and(|a| a.name == owner) => {
                a_opts.insert(key.clone(), value.clone());
            }
            Some((kind, owner)) => {
                let used = if kind == "queue" { queue.to_string() } else { alloc.unwrap_or("a Python policy").to_string() };
                return Err(format!(
                    "option {key} belongs to the {} policy {owner}, which this run does not use ({kind} is {used})",
                    if kind == "queue" { "queue" } else { "allocation" }
                ));
            }
            None => {
                let mut all: Vec<String> = allocs().iter().flat_map(|r| option_names(&(r.policy.options)())).collect();
                all.extend(queues().iter().flat_map(|r| option_names(&(r.policy.options)())));
                return Err(format!("unknown policy option {key:?}; options are: {}", all.join(", ")));
            }
        }
    }
    let queue_policy = (q.build)(&q_opts)?;
    let allocator = match a {
        Some(a) => Some((a.build)(&a_opts)?),
        None => None,
    };
    Ok((queue_policy, allocator))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;
    use crate::topology::Topology;

    #[test]
    fn option_names_are_unique_across_policies() {
        let mut seen = std::collections::BTreeMap::new();
        let schemas = allocs()
            .iter()
            .map(|r| (r.policy.name, (r.policy.options)()))
            .chain(queues().iter().map(|r| (r.policy.name, (r.policy.options)())));
        for (policy, schema) in schemas {
            for name in option_names(&schema) {
                if let Some(other) = seen.insert(name.clone(), policy) {
                    panic!("option {name} is declared by both {other} and {policy}");
                }
            }
        }
    }

    #[test]
    fn names_are_unique_and_every_policy_builds_with_defaults() {
        let t = Topology::preset("toy18").unwrap();
        let mut names = alloc_names();
        names.extend(queue_names());
        let n = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), n, "policy names must be unique");
        for r in allocs() {
            let mut a = (r.policy.build)(&Options::new()).unwrap();
            let empty = crate::alloc::new_state(a.as_ref(), &t, &[]);
            assert_eq!(a.name(), r.policy.name);
            assert_eq!(a.fungible(), r.policy.fungible, "{}: registry flag and Allocator::fungible disagree", r.policy.name);
            assert!(!r.doc.is_empty() && !r.policy.summary.is_empty(), "{} needs a //! doc and a summary", r.policy.name);
            assert!(a.check_fits_ever(&t, &empty, 1).is_ok());
            assert!(a.select(&t, &empty, 1, &crate::alloc::Guard::NONE).is_some());
        }
        for r in queues() {
            let q = (r.policy.build)(&Options::new()).unwrap();
            assert_eq!(q.name(), r.policy.name);
            assert!(!r.doc.is_empty() && !r.policy.summary.is_empty(), "{} needs a //! doc and a summary", r.policy.name);
        }
    }

    #[test]
    fn every_option_is_documented_and_has_a_default() {
        for schema in allocs().iter().map(|r| (r.policy.options)()).chain(queues().iter().map(|r| (r.policy.options)())) {
            let props = schema.as_object().and_then(|o| o.get("properties")).and_then(Value::as_object).cloned().unwrap_or_default();
            for (name, p) in props {
                assert!(p.get("description").is_some_and(|d| d.as_str().is_some_and(|d| !d.is_empty())), "option {name} has no doc comment");
                assert!(p.get("default").is_some(), "option {name} has no default in its schema");
            }
        }
    }

    #[test]
    fn options_go_to_their_policy_and_misplaced_ones_name_their_owner() {
        let mut o = Options::new();
        o.insert("leaf_order".into(), Value::from("paper"));
        o.insert("flux_window".into(), Value::from(true));
        assert!(build("easy", Some("isolated"), &o).is_ok());
        let err = build("fcfs", Some("isolated"), &o).err().unwrap();
        assert!(err.contains("flux_window") && err.contains("easy"), "{err}");
        let err = build("easy", Some("linear"), &o).err().unwrap();
        assert!(err.contains("leaf_order") && err.contains("isolated"), "{err}");
        let mut bad = Options::new();
        bad.insert("leaf_order".into(), Value::from("sideways"));
        let err = build("easy", Some("isolated"), &bad).err().unwrap();
        assert!(err.starts_with("isolated:") && err.contains("sideways"), "{err}");
        let mut unknown = Options::new();
        unknown.insert("no_such".into(), Value::from(1));
        assert!(build("easy", Some("linear"), &unknown).err().unwrap().contains("unknown policy option"));
        assert!(build("nope", Some("linear"), &Options::new()).is_err());
    }
}
