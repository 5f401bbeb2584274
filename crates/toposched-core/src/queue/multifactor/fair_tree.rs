//! Slurm 22.05's Fair Tree fair-share factor (the default without
//! `PriorityFlags=NO_FAIR_TREE`) and the usage it ranks, for a tree of accounts directly
//! under root, each holding user associations (and users directly under root, as Slurm's
//! own `root` user of account `root`).
//!
//! Followed from SchedMD/slurm tag `slurm-22-05-8-1`:
//! - **Level fair-share** (`_calc_assoc_fs`, src/plugins/priority/multifactor/fair_tree.c):
//!   `LF = S / U` with `S = shares / level_shares` (the shares of the association over
//!   those of it and its siblings: `_normalize_assoc_shares_fair_tree` and
//!   `_get_children_level_shares`, src/common/assoc_mgr.c), `U = usage_raw / parent's
//!   usage_raw` (`_ft_set_assoc_usage_efctv`; 0 when the parent has none, so `LF` is
//!   infinite: no usage ranks first); `S = 0` gives `LF = 0`.
//! - **Ranking** (`_calc_tree_fs`, `_cmp_level_fs`, `_apply_priority_fs`): siblings sorted by
//!   `LF` descending, users before accounts on equal `LF` (glibc's `qsort` is a stable merge
//!   sort, so ties keep the tree's order), visited depth first from `rank = rnt = number of
//!   user associations`: a user gets `fs_factor = rank / N` and `rnt` decreases; a user not
//!   tied with the sibling before it first sets `rank = rnt`. Ties: sibling users of equal
//!   `LF` share a rank; an account tied with its previous sibling passes the tie to its first
//!   child. The documentation (fair_tree.shtml, "Ties") says tied sibling accounts have their
//!   children merged before the descent; 22.05's `_count_tied_accounts` stops at the first
//!   account it meets (`if (!next_assoc->user) break;`), so it never merges: here too.
//! - **Usage** (priority_multifactor.c, `_decay_thread`, `_apply_decay`, `_apply_new_usage`,
//!   `decay_apply_new_usage`): at every run of the decay thread, with `delta` the whole
//!   seconds since its previous run, every association's usage is multiplied by
//!   `decay_factor^delta` (`decay_factor = 1 - 0.693 / PriorityDecayHalfLife`, 1 without a
//!   half-life); then each *running* job (not completing) adds `run * decay_factor^run *
//!   cpus` to its association and every ancestor up to root, `run` being the whole seconds
//!   from `max(previous run, job start)` to this run. A job's last piece (from the last run
//!   to its end) is added only under `AccountingStorageEnforce=limits` (`priority_p_job_end`
//!   is called from `_adjust_limit_usage`, acct_policy.c), which this model assumes off.
//!   `PriorityUsageResetPeriod` is not modelled (its default, NONE).
//!
//! Floating point: Slurm keeps usage and `LF` in `long double`; here `f64`. Ranks only
//! differ where two `LF` values agree to about 16 digits and not to 19.

/// The association a fair-share key stands for: `(account, user)` ids; an account of
/// [`ROOT`] is root itself (a user directly under root).
pub type AssocKey = (u32, u32);

/// The account id of root (users directly under root, like Slurm's `root` user).
pub const ROOT: u32 = u32::MAX;
/// The id standing for a job's unknown account or user.
pub const UNKNOWN: u32 = u32::MAX - 1;

/// `NO_VAL` as `_calc_tree_fs` starts `prev_level_fs` with.
const NO_VAL: f64 = 4294967294.0;

#[derive(Clone, Debug)]
struct Node {
    /// Index of the parent (root has none).
    parent: Option<usize>,
    user: bool,
    shares: u32,
    usage: f64,
    level_fs: f64,
    children: Vec<usize>,
}

/// The association tree, its usage and its fair-share factors.
#[derive(Clone, Debug)]
pub struct FairTree {
    nodes: Vec<Node>,
    /// Key -> node of a user association.
    users: std::collections::BTreeMap<AssocKey, usize>,
    fs_factor: Vec<f64>,
}

/// The tree as written in option `priority_fs_tree`: entries separated by `;`, each
/// `ACCOUNT[:SHARES]` (an account under root), `ACCOUNT/USER[:SHARES]` (a user association)
/// or `root/USER[:SHARES]` (a user directly under root); ids as the Workload numbers them,
/// shares 1 when not given (Slurm's default `Fairshare=1`).
pub fn parse_tree(text: &str) -> Result<Vec<(AssocKey, bool, u32)>, String> {
    let mut out = Vec::new();
    for item in text.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        let (name, shares) = match item.split_once(':') {
            Some((n, s)) => (n, s.trim().parse::<u32>().map_err(|_| format!("priority_fs_tree: {item:?}: shares must be a whole number"))?),
            None => (item, 1),
        };
        let id = |s: &str| -> Result<u32, String> {
            s.trim().parse::<u32>().ok().filter(|&v| v < UNKNOWN).ok_or_else(|| format!("priority_fs_tree: {item:?}: expected ACCOUNT[:SHARES], ACCOUNT/USER[:SHARES] or root/USER[:SHARES] with ids 0..{}", UNKNOWN - 1))
        };
        match name.split_once('/') {
            Some((a, u)) => {
                let acct = if a.trim() == "root" { ROOT } else { id(a)? };
                out.push(((acct, id(u)?), true, shares));
            }
            None => out.push(((id(name)?, 0), false, shares)),
        }
    }
    Ok(out)
}

impl FairTree {
    /// The tree of `entries` (as [`parse_tree`] gives them) plus, with shares 1, every
    /// account and user association of `jobs` not listed; ranked once (all usage 0), as
    /// the decay thread's first run ranks it before any job.
    pub fn new(entries: &[(AssocKey, bool, u32)], jobs: impl IntoIterator<Item = AssocKey>) -> FairTree {
        let mut t = FairTree {
            nodes: vec![Node { parent: None, user: false, shares: 1, usage: 0.0, level_fs: NO_VAL, children: Vec::new() }],
            users: Default::default(),
            fs_factor: vec![0.0],
        };
        let mut accounts: std::collections::BTreeMap<u32, usize> = Default::default();
        let mut account = |t: &mut FairTree, a: u32, shares: Option<u32>| -> usize {
            if a == ROOT {
                return 0;
            }
            if let Some(&i) = accounts.get(&a) {
                if let Some(s) = shares {
                    t.nodes[i].shares = s;
                }
                return i;
            }
            let i = t.push(0, false, shares.unwrap_or(1));
            accounts.insert(a, i);
            i
        };
        for &((a, u), user, shares) in entries {
            if user {
                let parent = account(&mut t, a, None);
                match t.users.get(&(a, u)) {
                    Some(&i) => t.nodes[i].shares = shares,
                    None => {
                        let i = t.push(parent, true, shares);
                        t.users.insert((a, u), i);
                    }
                }
            } else {
                account(&mut t, a, Some(shares));
            }
        }
        for (a, u) in jobs {
            if !t.users.contains_key(&(a, u)) {
                let parent = account(&mut t, a, None);
                let i = t.push(parent, true, 1);
                t.users.insert((a, u), i);
            }
        }
        t.rank();
        t
    }

    fn push(&mut self, parent: usize, user: bool, shares: u32) -> usize {
        let i = self.nodes.len();
        self.nodes.push(Node { parent: Some(parent), user, shares, usage: 0.0, level_fs: 0.0, children: Vec::new() });
        self.nodes[parent].children.push(i);
        self.fs_factor.push(0.0);
        i
    }

    /// Number of user associations (`g_user_assoc_count`).
    pub fn n_users(&self) -> usize {
        self.users.len()
    }

    /// The user association of a key (None: not in the tree).
    pub fn user(&self, key: AssocKey) -> Option<usize> {
        self.users.get(&key).copied()
    }

    /// `_apply_decay`: every association's usage, root's included, times `factor`.
    pub fn decay(&mut self, factor: f64) {
        for n in &mut self.nodes {
            n.usage *= factor;
        }
    }

    /// `_apply_new_usage`: `amount` added to a user association and each of its ancestors.
    pub fn add_usage(&mut self, user: usize, amount: f64) {
        let mut at = Some(user);
        while let Some(i) = at {
            self.nodes[i].usage += amount;
            at = self.nodes[i].parent;
        }
    }

    /// The usage of the association of a key (root's with `None`).
    pub fn usage(&self, key: Option<AssocKey>) -> f64 {
        key.and_then(|k| self.user(k)).map_or(self.nodes[0].usage, |i| self.nodes[i].usage)
    }

    /// The fair-share factor of a user association, as of the last [`FairTree::rank`].
    pub fn fs_factor(&self, user: usize) -> f64 {
        self.fs_factor[user]
    }

    /// `_apply_priority_fs`: every user association's fair-share factor from the usage now.
    pub fn rank(&mut self) {
        let n = self.users.len() as u32;
        let (mut rank, mut rnt) = (n, n);
        let children = self.nodes[0].children.clone();
        self.calc_tree_fs(children, &mut rank, &mut rnt, false, n);
    }

    fn calc_tree_fs(&mut self, mut siblings: Vec<usize>, rank: &mut u32, rnt: &mut u32, account_tied: bool, n: u32) {
        let level_shares: u64 = siblings.iter().map(|&i| self.nodes[i].shares as u64).sum();
        for &i in &siblings {
            let node = &self.nodes[i];
            let parent_usage = self.nodes[node.parent.expect("not root")].usage;
            let s = if level_shares > 0 { node.shares as f64 / level_shares as f64 } else { 0.0 };
            let u = if parent_usage == 0.0 { 0.0 } else { node.usage / parent_usage };
            self.nodes[i].level_fs = if s == 0.0 { 0.0 } else { s / u };
        }
        // stable: equal keys keep the tree's order, as glibc's merge sort does
        siblings.sort_by(|&a, &b| {
            let (x, y) = (&self.nodes[a], &self.nodes[b]);
            y.level_fs.partial_cmp(&x.level_fs).unwrap_or(std::cmp::Ordering::Equal).then(y.user.cmp(&x.user))
        });
        let mut prev = NO_VAL;
        for (k, &i) in siblings.iter().enumerate() {
            let lf = self.nodes[i].level_fs;
            let tied = if k == 0 && account_tied { true } else { prev == lf };
            if self.nodes[i].user {
                if !tied {
                    *rank = *rnt;
                }
                self.fs_factor[i] = *rank as f64 / n as f64;
                *rnt = rnt.saturating_sub(1);
            } else {
                let children = self.nodes[i].children.clone();
                self.calc_tree_fs(children, rank, rnt, tied, n);
            }
            prev = lf;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(entries: &str, jobs: &[AssocKey]) -> FairTree {
        FairTree::new(&parse_tree(entries).unwrap(), jobs.iter().copied())
    }

    #[test]
    fn no_usage_ranks_everyone_first() {
        // "Level FS values are infinity if the association has no usage" (fair_tree.html):
        // all tied, every user gets rank N / N = 1
        let t = tree("0:3;1:1", &[(0, 0), (0, 1), (1, 2)]);
        assert_eq!(t.n_users(), 3);
        for k in [(0, 0), (0, 1), (1, 2)] {
            assert_eq!(t.fs_factor(t.user(k).unwrap()), 1.0);
        }
    }

    #[test]
    fn hand_computed_flat_tree() {
        // fair_tree.html: LF = S / U, S = shares / shares of self and siblings, U = usage /
        // usage of self and siblings; "the highest ranked user receives 1.0"; users ranked
        // in a depth-first visit of the tree sorted by LF, fs = rank / user count.
        // Accounts A (id 0, 2 shares) and B (id 1, 1 share); A holds users 10, 11; B holds 12.
        // usage: 10 -> 30, 11 -> 10, 12 -> 60. root usage 100.
        // A: S = 2/3, U = 40/100 -> LF 1.667; B: S = 1/3, U = 0.6 -> LF 0.556: A first.
        // in A: 10: S 1/2, U 30/40 -> 0.667; 11: S 1/2, U 10/40 -> 2: 11 then 10.
        // ranks: 11 -> 3/3, 10 -> 2/3, 12 -> 1/3
        let mut t = tree("0:2;1:1", &[(0, 10), (0, 11), (1, 12)]);
        for (k, u) in [((0, 10), 30.0), ((0, 11), 10.0), ((1, 12), 60.0)] {
            let i = t.user(k).unwrap();
            t.add_usage(i, u);
        }
        assert_eq!(t.usage(None), 100.0);
        t.rank();
        let f = |k| t.fs_factor(t.user(k).unwrap());
        assert_eq!((f((0, 11)), f((0, 10)), f((1, 12))), (1.0, 2.0 / 3.0, 1.0 / 3.0));
        // decaying everything alike changes no ratio, so no rank
        t.decay(0.5);
        t.rank();
        let f = |k| t.fs_factor(t.user(k).unwrap());
        assert_eq!((f((0, 11)), f((0, 10)), f((1, 12))), (1.0, 2.0 / 3.0, 1.0 / 3.0));
    }

    #[test]
    fn ties_share_a_rank() {
        // "Sibling users with the same Level Fairshare receive the same rank"; the next
        // user after a tie takes its place in the count. Account 1 (no usage, LF infinite)
        // first: its user 3 -> 4/4; account 0 (LF (1/3) / (20/120) = 2): users 1 and 2
        // tied (usage 10 each) -> 3/4 both; then user 4 of account 2
        // (usage 100: LF (1/3) / (100/120) = 0.4 against account 0's (1/3) / (20/120) = 2)
        // -> rank 1/4 (rnt after three users).
        let mut t = tree("0;1;2", &[(0, 1), (0, 2), (1, 3), (2, 4)]);
        for (k, u) in [((0, 1), 10.0), ((0, 2), 10.0), ((2, 4), 100.0)] {
            let i = t.user(k).unwrap();
            t.add_usage(i, u);
        }
        t.rank();
        let f = |k| t.fs_factor(t.user(k).unwrap());
        assert_eq!((f((1, 3)), f((0, 1)), f((0, 2)), f((2, 4))), (1.0, 0.75, 0.75, 0.25));
    }

    #[test]
    fn a_user_tied_with_an_account_shares_its_first_users_rank() {
        // "A user with the same Level Fairshare as a sibling account will receive the same
        // rank as its highest ranked user": root's user 0 and account 5 both unused (LF
        // infinite), account 6 used. Users sort before accounts on ties: root/0 gets 3/3,
        // account 5's user 1 is tied -> 3/3, account 6's user 2 -> rank rnt = 1 -> 1/3.
        let mut t = tree("root/0;5;6", &[(5, 1), (6, 2)]);
        let i = t.user((6, 2)).unwrap();
        t.add_usage(i, 7.0);
        t.rank();
        let f = |k| t.fs_factor(t.user(k).unwrap());
        assert_eq!((f((ROOT, 0)), f((5, 1)), f((6, 2))), (1.0, 1.0, 1.0 / 3.0));
    }

    #[test]
    fn tied_accounts_are_not_merged_in_22_05() {
        // Accounts 0 and 1 tied (equal shares and usage), from the C code of 22.05 (no merge): account 0's users in its own order, then account 1's first
        // user tied with the last ranked. Account 0: users 1 (usage 1, LF (1/2)/(1/4) = 2),
        // 2 (usage 3, LF 2/3); account 1: user 3 (alone, LF 1). Accounts tied: equal usage 4
        // and shares. Merged (the documentation's rule) would give 1 -> 3/3, 3 -> 2/3, 2 -> 1/3;
        // 22.05 gives 1 -> 3/3, 2 -> 2/3, 3 -> 2/3 (tied with the user ranked before it).
        let mut t = tree("0;1", &[(0, 1), (0, 2), (1, 3)]);
        for (k, u) in [((0, 1), 1.0), ((0, 2), 3.0), ((1, 3), 4.0)] {
            let i = t.user(k).unwrap();
            t.add_usage(i, u);
        }
        t.rank();
        let f = |k| t.fs_factor(t.user(k).unwrap());
        assert_eq!((f((0, 1)), f((0, 2)), f((1, 3))), (1.0, 2.0 / 3.0, 2.0 / 3.0));
    }

    #[test]
    fn zero_shares_rank_last() {
        let mut t = tree("0:0;1:1", &[(0, 1), (1, 2)]);
        let i = t.user((1, 2)).unwrap();
        t.add_usage(i, 50.0);
        t.rank();
        // account 0 has S = 0 -> LF 0 even unused; account 1 LF (1/1) / 1 = 1
        assert_eq!((t.fs_factor(t.user((1, 2)).unwrap()), t.fs_factor(t.user((0, 1)).unwrap())), (1.0, 0.5));
    }

    #[test]
    fn bad_tree_entries_are_refused_with_the_entry() {
        assert!(parse_tree("0:x").unwrap_err().contains("\"0:x\""));
        assert!(parse_tree("a/1").unwrap_err().contains("ACCOUNT[:SHARES]"));
        assert_eq!(parse_tree("root/3:2; 4").unwrap(), vec![((ROOT, 3), true, 2), ((4, 0), false, 1)]);
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            /// Without ties, the documented property (fair_tree.html, "Overview for End
            /// Users"): user X ranks above user Y iff, at the level below their first
            /// common ancestor, X's side has the higher Level FS. So X's factor is
            /// (N - number of users beating X) / N, computed pairwise here from LF = S / U
            /// written out, with no sort or descent.
            #[test]
            fn ranks_follow_the_first_differing_ancestor(
                accounts in proptest::collection::vec((1u32..5, proptest::collection::vec((1u32..4, 1u32..1000), 1..4)), 1..5),
            ) {
                let mut entries = String::new();
                let mut jobs = Vec::new();
                let mut usage = Vec::new();
                for (a, (shares, users)) in accounts.iter().enumerate() {
                    entries += &format!("{a}:{shares};");
                    for (u, (ushares, used)) in users.iter().enumerate() {
                        let key = (a as u32, (a * 10 + u) as u32);
                        entries += &format!("{}/{}:{ushares};", key.0, key.1);
                        jobs.push(key);
                        usage.push((key, *used as f64, *ushares as f64, *shares as f64));
                    }
                }
                let mut t = FairTree::new(&parse_tree(&entries).unwrap(), jobs.iter().copied());
                for &(k, u, _, _) in &usage {
                    let i = t.user(k).unwrap();
                    t.add_usage(i, u);
                }
                t.rank();
                let acct_usage = |a: u32| usage.iter().filter(|x| x.0 .0 == a).map(|x| x.1).sum::<f64>();
                let total: f64 = usage.iter().map(|x| x.1).sum();
                let acct_shares: f64 = accounts.iter().map(|a| a.0 as f64).sum();
                let acct_lf = |a: u32| (accounts[a as usize].0 as f64 / acct_shares) / (acct_usage(a) / total);
                let user_lf = |k: AssocKey, u: f64, s: f64| {
                    let sib: f64 = usage.iter().filter(|x| x.0 .0 == k.0).map(|x| x.2).sum();
                    (s / sib) / (u / acct_usage(k.0))
                };
                // skip draws with (near) ties: the property is about strict orders
                let mut lfs: Vec<f64> = (0..accounts.len() as u32).map(acct_lf).collect();
                lfs.sort_by(|a, b| a.partial_cmp(b).unwrap());
                prop_assume!(lfs.windows(2).all(|w| w[1] - w[0] > 1e-9));
                for a in 0..accounts.len() as u32 {
                    let mut l: Vec<f64> = usage.iter().filter(|x| x.0 .0 == a).map(|x| user_lf(x.0, x.1, x.2)).collect();
                    l.sort_by(|a, b| a.partial_cmp(b).unwrap());
                    prop_assume!(l.windows(2).all(|w| w[1] - w[0] > 1e-9));
                }
                let n = usage.len() as f64;
                for &(x, ux, sx, _) in &usage {
                    let beaten_by = usage.iter().filter(|&&(y, uy, sy, _)| {
                        if y == x { return false; }
                        if y.0 != x.0 { acct_lf(y.0) > acct_lf(x.0) } else { user_lf(y, uy, sy) > user_lf(x, ux, sx) }
                    }).count() as f64;
                    prop_assert_eq!(t.fs_factor(t.user(x).unwrap()), (n - beaten_by) / n);
                }
            }
        }
    }
}
