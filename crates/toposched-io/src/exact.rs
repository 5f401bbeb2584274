//! Exact sums of float64 and int64 values and their one rounding into a mean: what the
//! summary's means are (`summary.rs`), equal bit for bit to the exact rational mean
//! correctly rounded to the nearest double (ties to even), as Python's `int / int` gives.
//!
//! A finite double is an integer multiple of 2^-1074; its mantissa (at most 53 bits)
//! times 2^(exponent) is added into one `i128` per binary exponent (2^74 values before an
//! overflow), so adding a value costs one addition, and the integer they make together
//! is formed only when asked for (a few thousand limb additions).

/// Scale of [`ExactFloatSum::scaled`]: the sum is returned as an integer multiple of
/// 2^-SCALE_BITS (every finite double is one: 53-bit mantissa times 2^(e - 1075), e >= 1,
/// and 1126 >= 1074 keeps the exponents of the mantissas' bins non-negative).
pub const SCALE_BITS: u32 = 1126;

/// Bins by biased exponent (1..=2046; subnormals share bin 1, whose weight they have).
const BINS: usize = 2047;
/// Limbs of the big integers formed from the bins: shifts up to 2046 + 51 = 2097 bits of
/// an i128, so 2225 bits and a sign; 40 limbs of 64 bits leave room to spare.
const LIMBS: usize = 40;

/// The exact sum of finite doubles.
#[derive(Clone)]
pub struct ExactFloatSum {
    bins: Box<[i128; BINS]>,
}

impl Default for ExactFloatSum {
    fn default() -> Self {
        ExactFloatSum { bins: Box::new([0; BINS]) }
    }
}

impl std::fmt::Debug for ExactFloatSum {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExactFloatSum").field("nonzero_bins", &self.bins.iter().filter(|&&b| b != 0).count()).finish()
    }
}

impl ExactFloatSum {
    /// Add a finite value (infinities and NaN are the caller's to keep apart).
    #[inline]
    pub fn add(&mut self, v: f64) {
        debug_assert!(v.is_finite());
        let bits = v.to_bits();
        let exp = ((bits >> 52) & 0x7ff) as usize;
        let frac = (bits & ((1u64 << 52) - 1)) as i128;
        // value = mant * 2^(max(exp, 1) - 1075): the implicit bit for normal numbers
        let mant = if exp == 0 { frac } else { frac | (1i128 << 52) };
        let bin = exp.max(1) - 1;
        if bits >> 63 == 1 {
            self.bins[bin] -= mant;
        } else {
            self.bins[bin] += mant;
        }
    }

    pub fn merge(&mut self, other: &ExactFloatSum) {
        for (a, b) in self.bins.iter_mut().zip(other.bins.iter()) {
            *a += *b;
        }
    }

    /// The sum times 2^SCALE_BITS, an integer, as little-endian two's complement limbs.
    pub fn scaled(&self) -> BigInt {
        let mut acc = BigInt::zero();
        for (bin, &v) in self.bins.iter().enumerate() {
            if v != 0 {
                // bin b holds mantissas of weight 2^(b + 1 - 1075); scaled by 2^1126: 2^(b + 52)
                acc.add_shifted(v, bin as u32 + 1 + SCALE_BITS - 1075);
            }
        }
        acc
    }

    /// The mean of `n` values whose finite sum this is: the exact sum over n, rounded once.
    pub fn mean(&self, n: u64) -> f64 {
        self.scaled().ratio(n, SCALE_BITS)
    }
}

/// A signed integer of a fixed 2,560 bits (two's complement, little-endian 64-bit limbs):
/// enough for any sum [`ExactFloatSum`] or an i128 holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BigInt {
    limbs: [u64; LIMBS],
}

impl BigInt {
    pub fn zero() -> Self {
        BigInt { limbs: [0; LIMBS] }
    }

    pub fn from_i128(v: i128) -> Self {
        let mut b = BigInt::zero();
        b.add_shifted(v, 0);
        b
    }

    pub fn is_negative(&self) -> bool {
        self.limbs[LIMBS - 1] >> 63 == 1
    }

    /// Adds `v * 2^shift` (modulo 2^2560: no overflow for the sums made here).
    pub fn add_shifted(&mut self, v: i128, shift: u32) {
        let q = (shift / 64) as usize;
        let r = shift % 64;
        let fill = if v < 0 { u64::MAX } else { 0 };
        // v sign-extended to three limbs, then shifted left by r bits into four
        let w = [v as u64, (v >> 64) as u64, fill];
        let mut s = [0u64; 4];
        for i in 0..4 {
            let cur = if i < 3 { w[i] } else { fill };
            let prev = if i == 0 { 0 } else { w[i - 1] };
            s[i] = if r == 0 { cur } else { (cur << r) | (prev >> (64 - r)) };
        }
        let mut carry = 0u64;
        for i in q..LIMBS {
            let add = if i - q < 4 { s[i - q] } else { fill };
            let (a, c1) = self.limbs[i].overflowing_add(add);
            let (b, c2) = a.overflowing_add(carry);
            self.limbs[i] = b;
            carry = u64::from(c1) + u64::from(c2);
        }
    }

    /// The magnitude as little-endian limbs, without leading zero limbs.
    fn magnitude(&self) -> Vec<u64> {
        let mut m = self.limbs.to_vec();
        if self.is_negative() {
            let mut carry = 1u64;
            for x in m.iter_mut() {
                let (v, c) = (!*x).overflowing_add(carry);
                *x = v;
                carry = u64::from(c);
            }
        }
        while m.last() == Some(&0) {
            m.pop();
        }
        m
    }

    /// Little-endian two's complement bytes, as few as hold the value and its sign.
    pub fn to_le_bytes(&self) -> Vec<u8> {
        let mut bytes: Vec<u8> = self.limbs.iter().flat_map(|l| l.to_le_bytes()).collect();
        let neg = self.is_negative();
        let pad = if neg { 0xff } else { 0 };
        while bytes.len() > 1 && bytes[bytes.len() - 1] == pad && (bytes[bytes.len() - 2] >> 7 == 1) == neg {
            bytes.pop();
        }
        bytes
    }

    /// `self / (n * 2^scale)` correctly rounded to the nearest double, ties to even
    /// (CPython's `int / int`); `n` must be positive.
    pub fn ratio(&self, n: u64, scale: u32) -> f64 {
        assert!(n > 0, "a mean of no values");
        let neg = self.is_negative();
        let mag = self.magnitude();
        if mag.is_empty() {
            return 0.0;
        }
        let lm = bit_len(&mag) as i64;
        let ln = i64::from(64 - n.leading_zeros());
        // at least 56 bits of quotient: 53 kept, the half bit, and room for the sticky one
        let k = (56 + ln - lm).max(0) as u32;
        let a = shl(&mag, k);
        let (q, rem) = div_rem(&a, n);
        let lq = bit_len(&q) as i64;
        let e = -i64::from(k) - i64::from(scale); // value = (q + rem/n) * 2^e
        let msb = lq - 1 + e;
        let drop = if msb >= -1022 { lq - 53 } else { -1074 - e };
        debug_assert!(drop >= 2);
        let mut m = bits(&q, drop as u64, lq.max(drop) as u64);
        let half = drop - 1 < lq && bit(&q, (drop - 1) as u64);
        let sticky = rem != 0 || any_below(&q, (drop - 1) as u64);
        if half && (sticky || m & 1 == 1) {
            m += 1;
        }
        let x = e + drop;
        let v = m as f64 * pow2(x);
        if neg {
            -v
        } else {
            v
        }
    }
}

/// 2^x as a double (x from -1074 up; beyond 1023, infinity).
fn pow2(x: i64) -> f64 {
    if x > 1023 {
        f64::INFINITY
    } else if x >= -1022 {
        f64::from_bits(((x + 1023) as u64) << 52)
    } else {
        f64::from_bits(1u64 << (x + 1074))
    }
}

fn bit_len(a: &[u64]) -> u64 {
    match a.iter().rposition(|&x| x != 0) {
        None => 0,
        Some(i) => 64 * i as u64 + u64::from(64 - a[i].leading_zeros()),
    }
}

fn shl(a: &[u64], k: u32) -> Vec<u64> {
    let q = (k / 64) as usize;
    let r = k % 64;
    let mut out = vec![0u64; a.len() + q + 1];
    for (i, &x) in a.iter().enumerate() {
        out[i + q] |= x << r;
        if r > 0 {
            out[i + q + 1] |= x >> (64 - r);
        }
    }
    out
}

fn div_rem(a: &[u64], n: u64) -> (Vec<u64>, u64) {
    let mut q = vec![0u64; a.len()];
    let mut rem: u128 = 0;
    for i in (0..a.len()).rev() {
        let cur = (rem << 64) | u128::from(a[i]);
        q[i] = (cur / u128::from(n)) as u64;
        rem = cur % u128::from(n);
    }
    (q, rem as u64)
}

fn bit(a: &[u64], i: u64) -> bool {
    let l = (i / 64) as usize;
    l < a.len() && (a[l] >> (i % 64)) & 1 == 1
}

/// Bits lo..hi (hi - lo <= 64) of `a` as an integer.
fn bits(a: &[u64], lo: u64, hi: u64) -> u64 {
    let mut v = 0u64;
    for i in (lo..hi).rev() {
        v = (v << 1) | u64::from(bit(a, i));
    }
    v
}

/// Any bit below position `i` set.
fn any_below(a: &[u64], i: u64) -> bool {
    let full = (i / 64) as usize;
    if a[..full.min(a.len())].iter().any(|&x| x != 0) {
        return true;
    }
    let r = i % 64;
    full < a.len() && r > 0 && a[full] & ((1u64 << r) - 1) != 0
}

/// The sum of int64 values, exactly.
pub fn int_sum(x: &[i64]) -> i128 {
    x.iter().map(|&v| i128::from(v)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Reference: the sum of values as an exact binary fraction, by long addition of
    /// each value's integer times 2^1126 (no bins).
    fn naive_scaled(values: &[f64]) -> BigInt {
        let mut acc = BigInt::zero();
        for &v in values {
            if v == 0.0 {
                continue;
            }
            let (m, e) = frexp(v);
            // v = m * 2^e, m in [0.5, 1): 53-bit integer m * 2^53 times 2^(e - 53)
            let mant = (m * 9007199254740992.0) as i128;
            acc.add_shifted(mant, (e - 53 + SCALE_BITS as i32) as u32);
        }
        acc
    }

    fn frexp(v: f64) -> (f64, i32) {
        let mut e = 0;
        let mut m = v;
        while m.abs() >= 1.0 {
            m /= 2.0;
            e += 1;
        }
        while m.abs() < 0.5 {
            m *= 2.0;
            e -= 1;
        }
        (m, e)
    }

    fn finite() -> impl Strategy<Value = f64> {
        prop_oneof![
            any::<f64>().prop_filter("finite", |v| v.is_finite()),
            Just(5e-324),
            Just(-5e-324),
            Just(f64::MAX),
            Just(-f64::MAX),
            (-1e6f64..1e6f64),
        ]
    }

    proptest! {
        #[test]
        fn bins_sum_is_the_long_sum(values in prop::collection::vec(finite(), 0..40)) {
            let mut s = ExactFloatSum::default();
            for &v in &values { s.add(v); }
            prop_assert_eq!(s.scaled(), naive_scaled(&values));
        }

        /// Small integers: the exact quotient's rounding is the hardware division's.
        #[test]
        fn ratio_of_small_integers_is_the_division(a in -(1i64 << 53)..(1i64 << 53), n in 1u64..(1 << 53)) {
            let got = BigInt::from_i128(i128::from(a)).ratio(n, 0);
            prop_assert_eq!(got.to_bits(), (a as f64 / n as f64).to_bits());
        }

        /// A sum divided by a power of two is the sum scaled exactly (no rounding past
        /// the sum's own: one double, any exponent including subnormal results).
        #[test]
        fn ratio_scales_exactly(v in finite(), k in 0u32..64) {
            let mut s = ExactFloatSum::default();
            s.add(v);
            let got = s.scaled().ratio(1 << k, SCALE_BITS);
            let want = v / (1u64 << k) as f64; // a division by a power of two rounds once too
            // an exact zero sum is 0.0 (Python's 0 / n); a nonzero one keeps its sign
            prop_assert_eq!(got.to_bits(), if v == 0.0 { 0.0f64.to_bits() } else { want.to_bits() });
        }
    }

    #[test]
    fn known_means() {
        let mut s = ExactFloatSum::default();
        for v in [0.1, 0.2, 0.3] {
            s.add(v);
        }
        // exact (0.1 + 0.2 + 0.3) / 3 rounds to 0.2 (the float sum 0.6000000000000001 does not)
        assert_eq!(s.mean(3), 0.2);
        let mut big = ExactFloatSum::default();
        big.add(f64::MAX);
        big.add(f64::MAX);
        assert_eq!(big.mean(2), f64::MAX);
        assert_eq!(BigInt::from_i128(i128::from(i64::MAX) * 2).ratio(2, 0), i64::MAX as f64);
        assert_eq!(BigInt::from_i128(-7).to_le_bytes(), vec![0xf9]);
        assert_eq!(BigInt::from_i128(128).to_le_bytes(), vec![0x80, 0]);
        // half of the smallest subnormal rounds to even (zero); three quarters of it up
        let mut tiny = ExactFloatSum::default();
        tiny.add(5e-324);
        assert_eq!(tiny.mean(2), 0.0);
        tiny.add(5e-324);
        tiny.add(5e-324);
        assert_eq!(tiny.mean(4), 5e-324);
    }
}
