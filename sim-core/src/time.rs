//! Virtual time: integer nanoseconds, never floats, never the wall clock.
//!
//! [`SimTime`] is an instant since the start of a run and [`SimDuration`] a
//! span; both wrap a `u64` count of nanoseconds (enough for 584 years).
//! Arithmetic that could overflow or go negative is checked: the `checked_*`
//! methods return `None`, the operators panic, as integer overflow would.
//!
//! Durations are written with units, always: `250ms`, `1.5s`, `2m`,
//! `1h30m`, `0s`. A bare number is rejected, because "30" in a config file
//! is a bug waiting to happen (seconds? milliseconds?). [`WallClock`] maps
//! labels such as `14:02:30` to offsets from a configured start such as
//! `14:00:00`, so incident timelines can be written the way they were
//! reported.

use std::fmt;
use std::ops::{Add, AddAssign, Div, Mul, Sub};
use std::str::FromStr;

const NS_PER_US: u64 = 1_000;
const NS_PER_MS: u64 = 1_000_000;
const NS_PER_S: u64 = 1_000_000_000;
const NS_PER_MIN: u64 = 60 * NS_PER_S;
const NS_PER_H: u64 = 60 * NS_PER_MIN;
const NS_PER_DAY: u64 = 24 * NS_PER_H;

/// An instant of simulated time, in nanoseconds since the start of the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimTime(u64);

/// A span of simulated time, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimDuration(u64);

impl SimTime {
    /// The start of every run.
    pub const ZERO: SimTime = SimTime(0);
    /// The largest representable instant (used as "never").
    pub const MAX: SimTime = SimTime(u64::MAX);

    /// An instant `ns` nanoseconds after the start.
    pub const fn from_nanos(ns: u64) -> Self {
        SimTime(ns)
    }
    /// Nanoseconds since the start.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// Time elapsed since the start, as a duration.
    pub const fn since_start(self) -> SimDuration {
        SimDuration(self.0)
    }
    /// Seconds since the start as `f64`: for reports and statistics only,
    /// never for scheduling.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / NS_PER_S as f64
    }
    /// `self + d`, or `None` on overflow.
    pub const fn checked_add(self, d: SimDuration) -> Option<SimTime> {
        match self.0.checked_add(d.0) {
            Some(v) => Some(SimTime(v)),
            None => None,
        }
    }
    /// `self + d`, saturating at [`SimTime::MAX`].
    pub const fn saturating_add(self, d: SimDuration) -> SimTime {
        SimTime(self.0.saturating_add(d.0))
    }
    /// `self - earlier`, or `None` if `earlier` is later than `self`.
    pub const fn checked_since(self, earlier: SimTime) -> Option<SimDuration> {
        match self.0.checked_sub(earlier.0) {
            Some(v) => Some(SimDuration(v)),
            None => None,
        }
    }
    /// `self - earlier`, or zero if `earlier` is later.
    pub const fn saturating_since(self, earlier: SimTime) -> SimDuration {
        SimDuration(self.0.saturating_sub(earlier.0))
    }
}

/// 2^53: below it every whole number of nanoseconds is an `f64`.
const EXACT_NS: f64 = 9_007_199_254_740_992.0;

impl SimDuration {
    /// No time at all.
    pub const ZERO: SimDuration = SimDuration(0);
    /// The largest representable span (used as "no limit").
    pub const MAX: SimDuration = SimDuration(u64::MAX);

    /// A span of `ns` nanoseconds.
    pub const fn from_nanos(ns: u64) -> Self {
        SimDuration(ns)
    }
    /// A span of `us` microseconds (saturating).
    pub const fn from_micros(us: u64) -> Self {
        SimDuration(us.saturating_mul(NS_PER_US))
    }
    /// A span of `ms` milliseconds (saturating).
    pub const fn from_millis(ms: u64) -> Self {
        SimDuration(ms.saturating_mul(NS_PER_MS))
    }
    /// A span of `s` seconds (saturating).
    pub const fn from_secs(s: u64) -> Self {
        SimDuration(s.saturating_mul(NS_PER_S))
    }
    /// A span of `m` minutes (saturating).
    pub const fn from_mins(m: u64) -> Self {
        SimDuration(m.saturating_mul(NS_PER_MIN))
    }
    /// The span closest to `secs` seconds, rounded to the nanosecond;
    /// negative and NaN give zero, too large saturates. This is the one
    /// door from sampled floats (distributions) into integer time.
    #[inline]
    pub fn from_secs_f64(secs: f64) -> Self {
        let x = secs * NS_PER_S as f64;
        // Below 2^53 ns (104 days), where `x − ⌊x⌋` is exact, rounds half
        // away from zero as `f64::round` does, without the library call
        // it costs where the CPU has no rounding instruction (twice a
        // request: an arrival gap and a service time).
        if (0.0..EXACT_NS).contains(&x) {
            let whole = x as u64;
            return SimDuration(whole + u64::from(x - whole as f64 >= 0.5));
        }
        Self::round_ns(x)
    }

    /// `x` nanoseconds rounded by `f64::round`: negative and NaN give
    /// zero, too large saturates.
    fn round_ns(x: f64) -> Self {
        let ns = x.round();
        if ns.is_nan() || ns <= 0.0 {
            SimDuration(0)
        } else if ns >= u64::MAX as f64 {
            SimDuration(u64::MAX)
        } else {
            SimDuration(ns as u64)
        }
    }
    /// Nanoseconds in this span.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// Whole milliseconds in this span (truncated).
    pub const fn as_millis(self) -> u64 {
        self.0 / NS_PER_MS
    }
    /// Seconds as `f64`: for reports and statistics only.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / NS_PER_S as f64
    }
    /// True for the zero span.
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }
    /// `self + other`, or `None` on overflow.
    pub const fn checked_add(self, other: SimDuration) -> Option<SimDuration> {
        match self.0.checked_add(other.0) {
            Some(v) => Some(SimDuration(v)),
            None => None,
        }
    }
    /// `self - other`, or `None` if it would be negative.
    pub const fn checked_sub(self, other: SimDuration) -> Option<SimDuration> {
        match self.0.checked_sub(other.0) {
            Some(v) => Some(SimDuration(v)),
            None => None,
        }
    }
    /// `self - other`, or zero if it would be negative.
    pub const fn saturating_sub(self, other: SimDuration) -> SimDuration {
        SimDuration(self.0.saturating_sub(other.0))
    }
    /// `self + other`, saturating at [`SimDuration::MAX`].
    pub const fn saturating_add(self, other: SimDuration) -> SimDuration {
        SimDuration(self.0.saturating_add(other.0))
    }
    /// `self × k`, or `None` on overflow.
    pub const fn checked_mul(self, k: u64) -> Option<SimDuration> {
        match self.0.checked_mul(k) {
            Some(v) => Some(SimDuration(v)),
            None => None,
        }
    }
    /// `self × k`, saturating.
    pub const fn saturating_mul(self, k: u64) -> SimDuration {
        SimDuration(self.0.saturating_mul(k))
    }
    /// `self × factor` rounded to the nanosecond (for load-dependent
    /// scaling of sampled delays); negative factors give zero.
    pub fn mul_f64(self, factor: f64) -> SimDuration {
        SimDuration::from_secs_f64(self.as_secs_f64() * factor)
    }
}

impl Add<SimDuration> for SimTime {
    type Output = SimTime;
    #[inline]
    fn add(self, d: SimDuration) -> SimTime {
        self.checked_add(d).expect("SimTime overflow")
    }
}
impl AddAssign<SimDuration> for SimTime {
    #[inline]
    fn add_assign(&mut self, d: SimDuration) {
        *self = *self + d;
    }
}
impl Sub<SimTime> for SimTime {
    type Output = SimDuration;
    #[inline]
    fn sub(self, earlier: SimTime) -> SimDuration {
        self.checked_since(earlier)
            .expect("SimTime subtraction went negative")
    }
}
impl Add for SimDuration {
    type Output = SimDuration;
    #[inline]
    fn add(self, o: SimDuration) -> SimDuration {
        self.checked_add(o).expect("SimDuration overflow")
    }
}
impl AddAssign for SimDuration {
    #[inline]
    fn add_assign(&mut self, o: SimDuration) {
        *self = *self + o;
    }
}
impl Sub for SimDuration {
    type Output = SimDuration;
    #[inline]
    fn sub(self, o: SimDuration) -> SimDuration {
        self.checked_sub(o).expect("SimDuration went negative")
    }
}
impl Mul<u64> for SimDuration {
    type Output = SimDuration;
    #[inline]
    fn mul(self, k: u64) -> SimDuration {
        self.checked_mul(k).expect("SimDuration overflow")
    }
}
impl Div<u64> for SimDuration {
    type Output = SimDuration;
    fn div(self, k: u64) -> SimDuration {
        SimDuration(self.0 / k)
    }
}

/// Why a duration, time or clock label could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseTimeError {
    what: &'static str,
    input: String,
    reason: String,
}

impl ParseTimeError {
    fn new(input: &str, reason: impl Into<String>) -> Self {
        ParseTimeError {
            what: "duration",
            input: input.to_string(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for ParseTimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid {} {:?}: {}", self.what, self.input, self.reason)
    }
}
impl std::error::Error for ParseTimeError {}

const UNITS: &str = "ns, us, ms, s, m, h or d (for example 250ms, 1.5s, 1h30m)";

fn unit_ns(unit: &str) -> Option<u64> {
    Some(match unit {
        "ns" => 1,
        "us" | "µs" | "μs" => NS_PER_US,
        "ms" => NS_PER_MS,
        "s" => NS_PER_S,
        "m" | "min" => NS_PER_MIN,
        "h" => NS_PER_H,
        "d" => NS_PER_DAY,
        _ => return None,
    })
}

/// Parses `<number><unit>` terms (`1h30m`, `1.5s`, `250ms`) exactly, with
/// integer arithmetic: `0.1s` is 100,000,000 ns, not a float near it.
fn parse_duration(input: &str) -> Result<SimDuration, ParseTimeError> {
    let s = input.trim();
    if s.is_empty() {
        return Err(ParseTimeError::new(
            input,
            format!("empty; expected a number with a unit: {UNITS}"),
        ));
    }
    let bytes = s.as_bytes();
    let mut i = 0;
    let mut total: u64 = 0;
    while i < bytes.len() {
        let num_start = i;
        while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
            i += 1;
        }
        let number = &s[num_start..i];
        let unit_start = i;
        while i < bytes.len() && !(bytes[i].is_ascii_digit() || bytes[i] == b'.') {
            i += 1;
        }
        let unit = s[unit_start..i].trim();
        if number.is_empty() {
            let what = if s.starts_with('-') {
                "durations cannot be negative".to_string()
            } else {
                format!("expected a number before {unit:?}")
            };
            return Err(ParseTimeError::new(input, what));
        }
        if unit.is_empty() {
            return Err(ParseTimeError::new(
                input,
                format!("{number} has no unit; durations carry units: {UNITS}"),
            ));
        }
        let scale = unit_ns(unit).ok_or_else(|| {
            ParseTimeError::new(input, format!("unknown unit {unit:?}; expected {UNITS}"))
        })?;
        let term = parse_scaled(number, scale).map_err(|r| ParseTimeError::new(input, r))?;
        total = total
            .checked_add(term)
            .ok_or_else(|| ParseTimeError::new(input, "too large (more than 584 years)"))?;
    }
    Ok(SimDuration(total))
}

/// `number × scale` for a decimal `number`, exactly, in nanoseconds.
fn parse_scaled(number: &str, scale: u64) -> Result<u64, String> {
    let (int_part, frac_part) = match number.split_once('.') {
        Some((a, b)) => (a, b),
        None => (number, ""),
    };
    if frac_part.contains('.') || (int_part.is_empty() && frac_part.is_empty()) {
        return Err(format!("{number:?} is not a number"));
    }
    let overflow = || "too large (more than 584 years)".to_string();
    let int: u64 = if int_part.is_empty() {
        0
    } else {
        int_part.parse().map_err(|_| overflow())?
    };
    let mut ns = int.checked_mul(scale).ok_or_else(overflow)?;
    let mut place = scale;
    for digit in frac_part.bytes() {
        let d = u64::from(digit - b'0');
        if !place.is_multiple_of(10) {
            if d != 0 {
                return Err("finer than one nanosecond".to_string());
            }
            continue;
        }
        place /= 10;
        ns = ns.checked_add(d * place).ok_or_else(overflow)?;
    }
    Ok(ns)
}

impl FromStr for SimDuration {
    type Err = ParseTimeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_duration(s)
    }
}

/// Writes `value / unit` with the fraction's trailing zeros trimmed.
fn write_decimal(f: &mut fmt::Formatter<'_>, value: u64, unit: u64, suffix: &str) -> fmt::Result {
    let int = value / unit;
    let frac = value % unit;
    if frac == 0 {
        return write!(f, "{int}{suffix}");
    }
    let width = unit.ilog10() as usize;
    let digits = format!("{frac:0width$}");
    write!(f, "{int}.{}{suffix}", digits.trim_end_matches('0'))
}

/// The shortest exact form that [`str::parse`] reads back: `0s`, `7ns`,
/// `1.234us`, `250ms`, `1.5s`, `1m30.5s`, `1h30m`, `2d3h`.
impl fmt::Display for SimDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0;
        if ns == 0 {
            return f.write_str("0s");
        }
        if ns < NS_PER_US {
            return write!(f, "{ns}ns");
        }
        if ns < NS_PER_MS {
            return write_decimal(f, ns, NS_PER_US, "us");
        }
        if ns < NS_PER_S {
            return write_decimal(f, ns, NS_PER_MS, "ms");
        }
        let mut rest = ns;
        for (unit, suffix) in [(NS_PER_DAY, "d"), (NS_PER_H, "h"), (NS_PER_MIN, "m")] {
            if rest >= unit {
                write!(f, "{}{suffix}", rest / unit)?;
                rest %= unit;
            }
        }
        if rest > 0 {
            write_decimal(f, rest, NS_PER_S, "s")?;
        }
        Ok(())
    }
}

/// Written as the offset since the start of the run (`t+2m30s`).
impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t+{}", SimDuration(self.0))
    }
}

impl serde::Serialize for SimDuration {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for SimDuration {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = SimDuration;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "a duration with a unit: {UNITS}")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<SimDuration, E> {
                v.parse().map_err(E::custom)
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<SimDuration, E> {
                Err(E::custom(format!(
                    "{v} has no unit; durations carry units: {UNITS}"
                )))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<SimDuration, E> {
                Err(E::custom(format!(
                    "{v} has no unit; durations carry units: {UNITS}"
                )))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<SimDuration, E> {
                Err(E::custom(format!(
                    "{v} has no unit; durations carry units: {UNITS}"
                )))
            }
        }
        d.deserialize_any(V)
    }
}

/// A time of day, `HH:MM:SS[.fff]`, as nanoseconds since midnight.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TimeOfDay(u64);

impl TimeOfDay {
    /// Nanoseconds since midnight.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
}

impl FromStr for TimeOfDay {
    type Err = ParseTimeError;
    fn from_str(input: &str) -> Result<Self, Self::Err> {
        parse_time_of_day(input).map_err(|mut e| {
            e.what = "wall-clock label";
            e
        })
    }
}

fn parse_time_of_day(input: &str) -> Result<TimeOfDay, ParseTimeError> {
    let bad = || {
        ParseTimeError::new(
            input,
            "expected a wall-clock label HH:MM:SS such as 14:02:30",
        )
    };
    let s = input.trim();
    let parts: Vec<&str> = s.split(':').collect();
    if parts.len() != 3 || parts[..2].iter().any(|p| p.len() != 2) {
        return Err(bad());
    }
    let h: u64 = parts[0].parse().map_err(|_| bad())?;
    let m: u64 = parts[1].parse().map_err(|_| bad())?;
    let (sec_str, frac_str) = match parts[2].split_once('.') {
        Some((a, b)) => (a, Some(b)),
        None => (parts[2], None),
    };
    if sec_str.len() != 2 || !sec_str.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let sec: u64 = sec_str.parse().map_err(|_| bad())?;
    if h > 23 || m > 59 || sec > 59 {
        return Err(ParseTimeError::new(
            input,
            "hours must be 0-23, minutes and seconds 0-59",
        ));
    }
    let frac_ns = match frac_str {
        Some(f) if !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()) => {
            parse_scaled(&format!("0.{f}"), NS_PER_S).map_err(|r| ParseTimeError::new(input, r))?
        }
        Some(_) => return Err(bad()),
        None => 0,
    };
    Ok(TimeOfDay(
        h * NS_PER_H + m * NS_PER_MIN + sec * NS_PER_S + frac_ns,
    ))
}

impl fmt::Display for TimeOfDay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0 % NS_PER_DAY;
        let (h, m, s) = (
            ns / NS_PER_H,
            ns % NS_PER_H / NS_PER_MIN,
            ns % NS_PER_MIN / NS_PER_S,
        );
        write!(f, "{h:02}:{m:02}:{s:02}")?;
        let ms = ns % NS_PER_S / NS_PER_MS;
        if !ns.is_multiple_of(NS_PER_S) {
            write!(f, ".{ms:03}")?;
        }
        Ok(())
    }
}

impl serde::Serialize for TimeOfDay {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for TimeOfDay {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = TimeOfDay;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a wall-clock label HH:MM:SS such as \"14:02:30\"")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<TimeOfDay, E> {
                v.parse().map_err(E::custom)
            }
        }
        d.deserialize_str(V)
    }
}

/// Maps wall-clock labels to simulated time: the run starts at `start`
/// (for instance `14:00:00`), so `14:02:30` is `t+2m30s`. A run may cross
/// midnight; labels then carry a day suffix (`00:00:05+1d`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WallClock {
    start: TimeOfDay,
}

impl WallClock {
    /// A clock whose `SimTime::ZERO` reads `start`.
    pub const fn new(start: TimeOfDay) -> Self {
        WallClock { start }
    }
    /// The label of `SimTime::ZERO`.
    pub const fn start(&self) -> TimeOfDay {
        self.start
    }
    /// The instant that reads `label` on the first day of the run.
    /// A label earlier than the start is an error, not a wrap to the next
    /// day: in an incident timeline that is almost always a typo.
    pub fn at(&self, label: TimeOfDay) -> Result<SimTime, ParseTimeError> {
        label
            .0
            .checked_sub(self.start.0)
            .map(SimTime)
            .ok_or_else(|| {
                ParseTimeError::new(
                    &label.to_string(),
                    format!("is before the clock's start {}", self.start),
                )
            })
    }
    /// Parses `HH:MM:SS` and returns its instant (see [`WallClock::at`]).
    pub fn parse(&self, label: &str) -> Result<SimTime, ParseTimeError> {
        self.at(label.parse()?)
    }
    /// The wall-clock label of `t` (`14:02:30`, `14:02:30.250`, or
    /// `00:00:05+1d` past midnight).
    pub fn label(&self, t: SimTime) -> String {
        let abs = self.start.0 + t.0;
        let day = abs / NS_PER_DAY;
        let tod = TimeOfDay(abs % NS_PER_DAY);
        if day == 0 {
            tod.to_string()
        } else {
            format!("{tod}+{day}d")
        }
    }
}

impl Default for WallClock {
    fn default() -> Self {
        WallClock::new(TimeOfDay(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> SimDuration {
        s.parse().unwrap()
    }

    /// What `from_secs_f64` computed before its fast path, for every
    /// value: the reference.
    fn by_round(secs: f64) -> SimDuration {
        SimDuration::round_ns(secs * NS_PER_S as f64)
    }

    #[test]
    fn from_secs_f64_rounds_as_f64_round_at_the_edges() {
        let half_ns = 0.5e-9;
        for secs in [
            0.0,
            -0.0,
            -1.0,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            half_ns,
            1.5e-9,
            2.5e-9,
            f64::from_bits(half_ns.to_bits() - 1),
            f64::from_bits(half_ns.to_bits() + 1),
            EXACT_NS / 1e9,
            (EXACT_NS - 1.0) / 1e9,
            EXACT_NS * 2.0 / 1e9,
            u64::MAX as f64 / 1e9,
            1e300,
        ] {
            assert_eq!(SimDuration::from_secs_f64(secs), by_round(secs), "{secs:e}");
        }
    }

    proptest::proptest! {
        #[test]
        fn from_secs_f64_rounds_as_f64_round(bits in proptest::prelude::any::<u64>(), scale in 0i32..12) {
            // Every bit pattern (subnormals, NaNs, huge values), and values
            // of every size from a nanosecond to days with their halves.
            let any = f64::from_bits(bits);
            proptest::prop_assert_eq!(SimDuration::from_secs_f64(any), by_round(any));
            let sized = (bits >> 11) as f64 / (1u64 << 53) as f64 * 10f64.powi(scale - 6);
            proptest::prop_assert_eq!(SimDuration::from_secs_f64(sized), by_round(sized));
            let half = ((bits % 1_000_000_000) as f64 + 0.5) / 1e9;
            proptest::prop_assert_eq!(SimDuration::from_secs_f64(half), by_round(half));
        }
    }

    #[test]
    fn parses_the_documented_forms_exactly() {
        assert_eq!(d("250ms"), SimDuration::from_millis(250));
        assert_eq!(d("1.5s"), SimDuration::from_millis(1500));
        assert_eq!(d("2m"), SimDuration::from_secs(120));
        assert_eq!(d("1h30m"), SimDuration::from_secs(5400));
        assert_eq!(d("0.1s").as_nanos(), 100_000_000);
        assert_eq!(d("7ns").as_nanos(), 7);
        assert_eq!(d("12us"), d("12µs"));
        assert_eq!(d("0s"), SimDuration::ZERO);
        assert_eq!(d(".5s"), SimDuration::from_millis(500));
        assert_eq!(d("1d"), SimDuration::from_secs(86_400));
    }

    #[test]
    fn rejects_what_is_ambiguous_or_impossible() {
        for bad in [
            "",
            "30",
            "-1s",
            "1.5",
            "5 parsecs",
            "1.2.3s",
            "0.5ns",
            "99999999999h",
            "s",
            "1..2s",
        ] {
            let err = bad.parse::<SimDuration>().unwrap_err().to_string();
            assert!(err.contains("invalid duration"), "{bad}: {err}");
        }
        assert!(
            "30".parse::<SimDuration>()
                .unwrap_err()
                .to_string()
                .contains("no unit")
        );
        assert!(
            "-1s"
                .parse::<SimDuration>()
                .unwrap_err()
                .to_string()
                .contains("negative")
        );
    }

    #[test]
    fn display_is_compact_and_round_trips() {
        for (ns, text) in [
            (0, "0s"),
            (7, "7ns"),
            (1_234, "1.234us"),
            (250_000_000, "250ms"),
            (1_500_000_000, "1.5s"),
            (90_500_000_000, "1m30.5s"),
            (5_400_000_000_000, "1h30m"),
            (86_400_000_000_000 + 3 * NS_PER_H, "1d3h"),
        ] {
            let dur = SimDuration::from_nanos(ns);
            assert_eq!(dur.to_string(), text);
            assert_eq!(d(text), dur);
        }
    }

    #[test]
    fn checked_arithmetic_reports_overflow_and_underflow() {
        assert_eq!(SimTime::MAX.checked_add(SimDuration::from_nanos(1)), None);
        assert_eq!(SimTime::ZERO.checked_since(SimTime::from_nanos(1)), None);
        assert_eq!(
            SimDuration::ZERO.checked_sub(SimDuration::from_nanos(1)),
            None
        );
        assert_eq!(SimDuration::MAX.checked_mul(2), None);
        assert_eq!(SimDuration::from_secs_f64(-1.0), SimDuration::ZERO);
        assert_eq!(SimDuration::from_secs_f64(1e30), SimDuration::MAX);
        assert_eq!(
            SimDuration::from_secs_f64(0.25),
            SimDuration::from_millis(250)
        );
    }

    #[test]
    fn wall_clock_maps_labels_both_ways() {
        let clock = WallClock::new("14:00:00".parse().unwrap());
        let t = clock.parse("14:02:30").unwrap();
        assert_eq!(t.since_start(), SimDuration::from_secs(150));
        assert_eq!(clock.label(t), "14:02:30");
        assert_eq!(
            clock.label(t + SimDuration::from_millis(250)),
            "14:02:30.250"
        );
        assert_eq!(
            clock.label(SimTime::ZERO + SimDuration::from_secs(10 * 3600 + 5)),
            "00:00:05+1d"
        );
        assert!(
            clock
                .parse("13:59:59")
                .unwrap_err()
                .to_string()
                .contains("before the clock's start")
        );
        for bad in [
            "14:2:30",
            "24:00:00",
            "14:60:00",
            "14:02",
            "noon",
            "14:02:30.",
        ] {
            assert!(bad.parse::<TimeOfDay>().is_err(), "{bad}");
        }
        assert_eq!(
            clock.parse("14:02:30.5").unwrap().as_nanos(),
            150_500_000_000
        );
    }
}
