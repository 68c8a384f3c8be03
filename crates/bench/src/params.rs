//! Parsing and printing of the bench's parameter values: sizes (`4KiB`,
//! `32MiB`, `1G`, `512`, `1.5MiB`), durations (`10ms`, `1s`, `0`, `250us`)
//! and counts. Each parser returns a one-line message that the command line
//! prefixes with the option's name, so a mistake names the option at fault.

use std::time::Duration;

/// Most threads (per client) or clients one invocation may ask for; beyond
/// this the OS thread count, not the target, would be measured.
pub const MAX_THREADS: usize = 4096;
pub const MAX_CLIENTS: usize = 256;

/// Splits a number from its unit: `"1.5MiB"` → `(1.5, "MiB")`.
fn split_unit(s: &str) -> Result<(f64, &str), String> {
    let s = s.trim();
    let end = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (num, unit) = s.split_at(end);
    if num.is_empty() {
        return Err(format!("'{s}' does not start with a number"));
    }
    let value: f64 = num.parse().map_err(|_| format!("'{num}' is not a number"))?;
    Ok((value, unit.trim()))
}

/// A byte count. `K`, `M`, `G`, `T` (also `KiB`…`TiB`, any case) are powers
/// of 1024; `KB`, `MB`, `GB`, `TB` are powers of 1000; no unit or `B` is
/// bytes. Fractions are allowed and rounded to a whole byte.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let (value, unit) = split_unit(s)?;
    let mult: f64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "ki" | "kib" => 1024.0,
        "m" | "mi" | "mib" => 1024.0 * 1024.0,
        "g" | "gi" | "gib" => 1024.0 * 1024.0 * 1024.0,
        "t" | "ti" | "tib" => 1024.0f64.powi(4),
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "tb" => 1e12,
        _ => return Err(format!("unknown size unit '{unit}' in '{s}' (use B, KiB, MiB, GiB, TiB, KB, MB, GB)")),
    };
    let bytes = (value * mult).round();
    if !(bytes.is_finite() && bytes < 2f64.powi(62)) {
        return Err(format!("'{s}' is too large"));
    }
    Ok(bytes as u64)
}

/// A byte count that must be at least one byte.
pub fn parse_nonzero_size(s: &str) -> Result<u64, String> {
    match parse_size(s)? {
        0 => Err("must be larger than 0".to_string()),
        n => Ok(n),
    }
}

/// A duration: `ns`, `us` (or `µs`), `ms`, `s`, `m`/`min`, `h`. A bare
/// number is refused (is `10` seconds or milliseconds?) except `0`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let (value, unit) = split_unit(s)?;
    let secs = match unit.to_ascii_lowercase().as_str() {
        "" if value == 0.0 => 0.0,
        "" => return Err(format!("'{s}' needs a unit, e.g. 10ms or 1s")),
        "ns" => value / 1e9,
        "us" | "µs" => value / 1e6,
        "ms" => value / 1e3,
        "s" | "sec" => value,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        _ => return Err(format!("unknown duration unit '{unit}' in '{s}' (use us, ms, s, min, h)")),
    };
    Duration::try_from_secs_f64(secs).map_err(|_| format!("'{s}' is out of range"))
}

/// A duration that must be longer than zero.
pub fn parse_nonzero_duration(s: &str) -> Result<Duration, String> {
    match parse_duration(s)? {
        d if d.is_zero() => Err("must be longer than 0".to_string()),
        d => Ok(d),
    }
}

/// A count in `1..=max`.
pub fn parse_count(s: &str, max: usize) -> Result<usize, String> {
    let n: usize = s.trim().parse().map_err(|_| format!("'{s}' is not a whole number"))?;
    match n {
        0 => Err("must be at least 1".to_string()),
        n if n > max => Err(format!("{n} is more than the limit of {max}")),
        n => Ok(n),
    }
}

/// A share of something in percent, above 0 and at most 100.
pub fn parse_percent(s: &str) -> Result<f64, String> {
    let p: f64 = s.trim().trim_end_matches('%').parse().map_err(|_| format!("'{s}' is not a number"))?;
    if p > 0.0 && p <= 100.0 {
        Ok(p)
    } else {
        Err(format!("{p}: a percentage above 0 and at most 100"))
    }
}

pub fn parse_threads(s: &str) -> Result<usize, String> {
    parse_count(s, MAX_THREADS)
}

pub fn parse_clients(s: &str) -> Result<usize, String> {
    parse_count(s, MAX_CLIENTS)
}

/// Parses a comma-separated list with `item`, refusing empty items.
pub fn parse_list<T>(s: &str, item: impl Fn(&str) -> Result<T, String>) -> Result<Vec<T>, String> {
    s.split(',')
        .map(|part| if part.trim().is_empty() { Err(format!("empty item in list '{s}'")) } else { item(part) })
        .collect()
}

/// `33554432` → `32MiB`; exact binary multiples keep their unit.
pub fn fmt_size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes;
    let mut unit = 0;
    while value >= 1024 && value & 1023 == 0 && unit < UNITS.len() - 1 {
        value /= 1024;
        unit += 1;
    }
    if value >= 1024 * 10 && unit < UNITS.len() - 1 {
        return format!("{:.1}{}", value as f64 / 1024.0, UNITS[unit + 1]);
    }
    format!("{value}{}", UNITS[unit])
}

/// `Duration` → `250us`, `10ms`, `1.5s`.
pub fn fmt_duration(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us == 0.0 {
        "0".to_string()
    } else if us < 1000.0 {
        format!("{}us", trim_float(us))
    } else if us < 1e6 {
        format!("{}ms", trim_float(us / 1e3))
    } else {
        format!("{}s", trim_float(us / 1e6))
    }
}

fn trim_float(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4KiB"), Ok(4096));
        assert_eq!(parse_size("32MiB"), Ok(32 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("512"), Ok(512));
        assert_eq!(parse_size("1.5MiB"), Ok(3 << 19));
        assert_eq!(parse_size("5MB"), Ok(5_000_000));
        assert!(parse_size("4 parsecs").unwrap_err().contains("unknown size unit"));
        assert!(parse_size("MiB").is_err());
        assert!(parse_nonzero_size("0").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10ms"), Ok(Duration::from_millis(10)));
        assert_eq!(parse_duration("1s"), Ok(Duration::from_secs(1)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        assert!(parse_duration("10").unwrap_err().contains("needs a unit"));
        assert!(parse_duration("3 fortnights").is_err());
    }

    #[test]
    fn lists_and_counts() {
        assert_eq!(parse_list("1,4,16", parse_threads), Ok(vec![1, 4, 16]));
        assert!(parse_list("1,,2", parse_threads).is_err());
        assert!(parse_threads("0").is_err());
        assert!(parse_threads("5000").unwrap_err().contains("4096"));
    }

    #[test]
    fn printing() {
        assert_eq!(fmt_size(32 << 20), "32MiB");
        assert_eq!(fmt_size(1536), "1536B");
        assert_eq!(fmt_size(8192), "8KiB");
        assert_eq!(fmt_duration(Duration::from_millis(10)), "10ms");
        assert_eq!(fmt_duration(Duration::from_micros(1500)), "1.5ms");
    }
}
