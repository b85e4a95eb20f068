//! Dates and times as a person types and reads them: ISO-8601 text for the
//! `DATETIME_*` types, as numpy prints `datetime64` values of the same unit
//! (what tiledb-py users see), and parsing such text back into the stored
//! integer.
//!
//! A `DATETIME_<unit>` value is a signed count of units since
//! 1970-01-01T00:00:00 UTC. Years and months count calendar years and
//! months; weeks count 7-day periods from the epoch (a Thursday), as numpy
//! does. `TIME_*` values (durations) are left as integers.

use jiff::civil::{Date, DateTime};
use jiff::tz::TimeZone;
use jiff::Timestamp;
use tiledb_runtime::filter::Datatype;

const ATTOS_PER_SECOND: i128 = 1_000_000_000_000_000_000;

/// How a datetime unit is counted.
#[derive(Clone, Copy)]
enum Unit {
    Years,
    Months,
    Weeks,
    /// A fixed length in attoseconds, and how many fraction digits numpy
    /// prints for it (0 for days, hours, minutes and seconds), and the
    /// text the whole-second part keeps (`%Y-%m-%d`, …).
    Fixed {
        attos: i128,
        digits: usize,
        civil: &'static str,
    },
}

/// The unit of a DATETIME_ type, from the Datatype table of spec/enums.toml
/// (`time_unit`, numpy's spelling); how numpy prints each is ours.
fn unit(dt: Datatype) -> Option<Unit> {
    let fixed = |attos: i128, digits, civil| {
        Some(Unit::Fixed {
            attos,
            digits,
            civil,
        })
    };
    const E15: i128 = 1_000_000_000_000_000;
    if !dt.is_datetime() {
        return None;
    }
    match dt.time_unit() {
        "Y" => Some(Unit::Years),
        "M" => Some(Unit::Months),
        "W" => Some(Unit::Weeks),
        "D" => fixed(86_400 * ATTOS_PER_SECOND, 0, "%Y-%m-%d"),
        "h" => fixed(3_600 * ATTOS_PER_SECOND, 0, "%Y-%m-%dT%H"),
        "m" => fixed(60 * ATTOS_PER_SECOND, 0, "%Y-%m-%dT%H:%M"),
        "s" => fixed(ATTOS_PER_SECOND, 0, "%Y-%m-%dT%H:%M:%S"),
        "ms" => fixed(E15, 3, "%Y-%m-%dT%H:%M:%S"),
        "us" => fixed(1_000_000_000_000, 6, "%Y-%m-%dT%H:%M:%S"),
        "ns" => fixed(1_000_000_000, 9, "%Y-%m-%dT%H:%M:%S"),
        "ps" => fixed(1_000_000, 12, "%Y-%m-%dT%H:%M:%S"),
        "fs" => fixed(1_000, 15, "%Y-%m-%dT%H:%M:%S"),
        "as" => fixed(1, 18, "%Y-%m-%dT%H:%M:%S"),
        _ => None,
    }
}

/// Whether values of `dt` print as ISO-8601 dates and times.
pub fn is_datetime(dt: Datatype) -> bool {
    unit(dt).is_some()
}

/// `value` of type `dt` as ISO-8601 text; `None` when `dt` is not a
/// datetime type or the instant lies outside the years -9999..=9999 (the
/// caller then prints the integer).
pub fn format(dt: Datatype, value: i64) -> Option<String> {
    let epoch = Date::constant(1970, 1, 1);
    match unit(dt)? {
        Unit::Years => {
            let year = i16::try_from(1970 + i128::from(value)).ok()?;
            let date = Date::new(year, 1, 1).ok()?;
            Some(date.strftime("%Y").to_string())
        }
        Unit::Months => {
            let months = 1970 * 12 + i128::from(value);
            let year = i16::try_from(months.div_euclid(12)).ok()?;
            let month = i8::try_from(months.rem_euclid(12) + 1).ok()?;
            Some(
                Date::new(year, month, 1)
                    .ok()?
                    .strftime("%Y-%m")
                    .to_string(),
            )
        }
        Unit::Weeks => {
            let days = i64::try_from(i128::from(value) * 7).ok()?;
            let date = epoch
                .checked_add(jiff::Span::new().try_days(days).ok()?)
                .ok()?;
            Some(date.strftime("%Y-%m-%d").to_string())
        }
        Unit::Fixed {
            attos,
            digits,
            civil,
        } => {
            let total = i128::from(value).checked_mul(attos)?;
            let seconds = i64::try_from(total.div_euclid(ATTOS_PER_SECOND)).ok()?;
            let fraction = total.rem_euclid(ATTOS_PER_SECOND);
            let instant = Timestamp::from_second(seconds).ok()?;
            let civil_time = instant.to_zoned(TimeZone::UTC).datetime();
            let mut text = civil_time.strftime(civil).to_string();
            if digits > 0 {
                let all = format!("{fraction:018}");
                text.push('.');
                text.push_str(&all[..digits]);
            }
            Some(text)
        }
    }
}

/// Parses `text` as a value of the datetime type `dt`: an integer (the
/// stored count) or ISO-8601 text — a date `YYYY-MM-DD`, optionally with
/// `THH[:MM[:SS[.fraction]]]`, or `YYYY` / `YYYY-MM` — read as UTC and
/// rounded down to the type's unit.
pub fn parse(dt: Datatype, text: &str) -> Result<i64, String> {
    let text = text.trim();
    // Integers are the stored count, except that four digits on a
    // DATETIME_YEAR are a year (as ISO-8601 writes one).
    let year_text = text.len() == 4 && matches!(unit(dt), Some(Unit::Years));
    if let (Ok(v), false) = (text.parse::<i64>(), year_text) {
        return Ok(v);
    }
    let unit = unit(dt).ok_or_else(|| format!("{} is not a datetime type", dt.name()))?;
    let (date_time, fraction) = parse_civil(text)?;
    let fits =
        |v: i128| i64::try_from(v).map_err(|_| format!("{text:?} does not fit a {}", dt.name()));
    match unit {
        Unit::Years => fits(i128::from(date_time.year()) - 1970),
        Unit::Months => {
            fits((i128::from(date_time.year()) - 1970) * 12 + i128::from(date_time.month()) - 1)
        }
        Unit::Weeks | Unit::Fixed { .. } => {
            let instant = date_time
                .to_zoned(TimeZone::UTC)
                .map_err(|e| format!("{text:?}: {e}"))?
                .timestamp();
            let total = i128::from(instant.as_second()) * ATTOS_PER_SECOND + fraction;
            let per_unit = match unit {
                Unit::Weeks => 7 * 86_400 * ATTOS_PER_SECOND,
                Unit::Fixed { attos, .. } => attos,
                _ => unreachable!("handled above"),
            };
            fits(total.div_euclid(per_unit))
        }
    }
}

/// The civil date and time of `text`, and its fraction of a second in
/// attoseconds (jiff keeps nanoseconds; the digits beyond are ours).
fn parse_civil(text: &str) -> Result<(DateTime, i128), String> {
    let bad = || {
        format!("{text:?} is not an integer or an ISO-8601 date (YYYY, YYYY-MM, YYYY-MM-DD[THH[:MM[:SS[.f]]]])")
    };
    let (whole, fraction) = match text.split_once('.') {
        Some((whole, digits)) => {
            if digits.is_empty() || digits.len() > 18 || !digits.bytes().all(|b| b.is_ascii_digit())
            {
                return Err(bad());
            }
            let padded = format!("{digits:0<18}");
            (whole, padded.parse::<i128>().map_err(|_| bad())?)
        }
        None => (text, 0),
    };
    let (date_text, time_text) = match whole.split_once('T') {
        Some((d, t)) => (d, Some(t)),
        None => (whole, None),
    };
    let mut parts = date_text.splitn(3, '-');
    let mut number = |default: i64| -> Result<i64, String> {
        match parts.next() {
            Some(p) if !p.is_empty() => p.parse::<i64>().map_err(|_| bad()),
            Some(_) => Err(bad()),
            None => Ok(default),
        }
    };
    let year = i16::try_from(number(1970)?).map_err(|_| bad())?;
    let month = i8::try_from(number(1)?).map_err(|_| bad())?;
    let day = i8::try_from(number(1)?).map_err(|_| bad())?;
    let mut clock = [0i8; 3];
    if let Some(time_text) = time_text {
        let fields: Vec<&str> = time_text.split(':').collect();
        if fields.len() > 3 {
            return Err(bad());
        }
        for (slot, field) in clock.iter_mut().zip(&fields) {
            *slot = field.parse::<i8>().map_err(|_| bad())?;
        }
    } else if fraction != 0 {
        return Err(bad());
    }
    DateTime::new(year, month, day, clock[0], clock[1], clock[2], 0)
        .map(|date_time| (date_time, fraction))
        .map_err(|e| format!("{text:?}: {e}"))
}

/// A time given on the command line for `--at`: milliseconds since the
/// epoch, or ISO-8601 text (UTC).
pub fn parse_timestamp_ms(text: &str) -> Result<u64, String> {
    let ms = parse(Datatype::DatetimeMs, text)?;
    u64::try_from(ms).map_err(|_| format!("{text:?} is before 1970"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_each_unit_as_numpy_does() {
        use Datatype::*;
        let cases: &[(Datatype, i64, &str)] = &[
            (DatetimeYear, 50, "2020"),
            (DatetimeMonth, 601, "2020-02"),
            (DatetimeWeek, 1, "1970-01-08"),
            (DatetimeDay, -1, "1969-12-31"),
            (DatetimeHr, 25, "1970-01-02T01"),
            (DatetimeMin, 61, "1970-01-01T01:01"),
            (DatetimeSec, 1_600_000_000, "2020-09-13T12:26:40"),
            (DatetimeMs, -1, "1969-12-31T23:59:59.999"),
            (DatetimeUs, 1_500_000, "1970-01-01T00:00:01.500000"),
            (DatetimeNs, 1, "1970-01-01T00:00:00.000000001"),
            (
                DatetimePs,
                2_000_000_000_001,
                "1970-01-01T00:00:02.000000000001",
            ),
            (DatetimeFs, 1, "1970-01-01T00:00:00.000000000000001"),
            (DatetimeAs, 1, "1970-01-01T00:00:00.000000000000000001"),
        ];
        for &(dt, value, text) in cases {
            assert_eq!(format(dt, value).as_deref(), Some(text), "{}", dt.name());
            assert_eq!(parse(dt, text), Ok(value), "{} {text}", dt.name());
        }
    }

    #[test]
    fn integers_and_coarser_text_parse_too() {
        assert_eq!(parse(Datatype::DatetimeDay, "18262"), Ok(18262));
        assert_eq!(parse(Datatype::DatetimeDay, "2020-01-01"), Ok(18262));
        // Finer text is rounded down to the unit.
        assert_eq!(parse(Datatype::DatetimeDay, "2020-01-01T23:59"), Ok(18262));
        assert_eq!(parse(Datatype::DatetimeMonth, "2020-01-31"), Ok(600));
        // Four digits are a year on a DATETIME_YEAR, a count elsewhere.
        assert_eq!(parse(Datatype::DatetimeYear, "2020"), Ok(50));
        assert_eq!(parse(Datatype::DatetimeMonth, "2020"), Ok(2020));
        assert_eq!(
            parse(Datatype::DatetimeMs, "1970-01-01T00:00:01.5"),
            Ok(1500)
        );
        assert!(parse(Datatype::DatetimeSec, "2020-13-01").is_err());
        assert!(parse(Datatype::DatetimeSec, "yesterday").is_err());
        assert!(parse(Datatype::Int32, "2020-01-01").is_err());
    }

    #[test]
    fn out_of_range_values_stay_integers() {
        assert_eq!(format(Datatype::DatetimeDay, i64::MAX), None);
        assert_eq!(format(Datatype::DatetimeYear, 20_000), None);
        assert_eq!(format(Datatype::Int64, 0), None);
    }
}
