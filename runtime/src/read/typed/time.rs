//! Dates and times as jiff types: a stored count of a `DATETIME_*` unit
//! since the epoch (1970-01-01T00:00:00Z) as a [`Timestamp`], a `TIME_*`
//! count since midnight as a [`SignedDuration`], and back — exactly, or
//! not at all (a value the unit cannot hold is an error, never rounded).

use jiff::civil::Date;
use jiff::{SignedDuration, Timestamp};

use crate::filter::Datatype;

/// Nanoseconds per unit for the units that are whole nanoseconds; the
/// finer units (`PS`, `FS`, `AS`) as a divisor (units per nanosecond).
enum Unit {
    /// Calendar years since 1970.
    Year,
    /// Calendar months since 1970-01.
    Month,
    /// This many nanoseconds.
    Nanos(i128),
    /// This many units make one nanosecond.
    PerNano(i128),
}

const NS_PER_SEC: i128 = 1_000_000_000;

/// The unit of a `time_unit` as spec/ spells it (numpy's letters).
fn unit_named(name: &str) -> Option<Unit> {
    Some(match name {
        "Y" => Unit::Year,
        "M" => Unit::Month,
        "W" => Unit::Nanos(7 * 86_400 * NS_PER_SEC),
        "D" => Unit::Nanos(86_400 * NS_PER_SEC),
        "h" => Unit::Nanos(3_600 * NS_PER_SEC),
        "m" => Unit::Nanos(60 * NS_PER_SEC),
        "s" => Unit::Nanos(NS_PER_SEC),
        "ms" => Unit::Nanos(1_000_000),
        "us" => Unit::Nanos(1_000),
        "ns" => Unit::Nanos(1),
        "ps" => Unit::PerNano(1_000),
        "fs" => Unit::PerNano(1_000_000),
        "as" => Unit::PerNano(1_000_000_000),
        _ => return None,
    })
}

/// The unit of a `DATETIME_*` type (spec/'s `is_datetime` and `time_unit`).
fn datetime_unit(datatype: Datatype) -> Option<Unit> {
    datatype
        .is_datetime()
        .then(|| unit_named(datatype.time_unit()))
        .flatten()
}

/// The unit of a `TIME_*` type (spec/'s `is_time` and `time_unit`).
fn time_unit(datatype: Datatype) -> Option<Unit> {
    datatype
        .is_time()
        .then(|| unit_named(datatype.time_unit()))
        .flatten()
}

/// The datatype is a `DATETIME_*` type.
pub(crate) fn is_datetime(datatype: Datatype) -> bool {
    datatype.is_datetime()
}

/// The datatype is a `TIME_*` type.
pub(crate) fn is_time(datatype: Datatype) -> bool {
    datatype.is_time()
}

/// A nanosecond count as a count of `unit`, when exact and within i64.
fn nanos_to_count(nanos: i128, unit: &Unit) -> Option<i64> {
    let count = match unit {
        Unit::Nanos(n) => (nanos % n == 0).then(|| nanos / n)?,
        Unit::PerNano(n) => nanos.checked_mul(*n)?,
        Unit::Year | Unit::Month => return None,
    };
    i64::try_from(count).ok()
}

/// A count of `unit` as nanoseconds, when exact.
fn count_to_nanos(count: i64, unit: &Unit) -> Option<i128> {
    match unit {
        Unit::Nanos(n) => (count as i128).checked_mul(*n),
        Unit::PerNano(n) => ((count as i128) % n == 0).then(|| count as i128 / n),
        Unit::Year | Unit::Month => None,
    }
}

/// The stored count of a `DATETIME_*` value for `timestamp`; why not when
/// the unit cannot hold it exactly.
pub(crate) fn timestamp_to_count(timestamp: Timestamp, datatype: Datatype) -> Result<i64, String> {
    let unit = datetime_unit(datatype)
        .ok_or_else(|| format!("a timestamp is no value of {}", datatype.name()))?;
    let inexact = || {
        format!(
            "{timestamp} is no whole number of {} units within 64 bits",
            datatype.name()
        )
    };
    match unit {
        Unit::Year | Unit::Month => {
            let utc = timestamp.to_zoned(jiff::tz::TimeZone::UTC);
            let start_of_month = utc.day() == 1 && utc.time() == jiff::civil::Time::midnight();
            let years = i64::from(utc.year()) - 1970;
            match unit {
                Unit::Year if start_of_month && utc.month() == 1 => Ok(years),
                Unit::Month if start_of_month => Ok(years * 12 + i64::from(utc.month()) - 1),
                _ => Err(inexact()),
            }
        }
        unit => nanos_to_count(timestamp.as_nanosecond(), &unit).ok_or_else(inexact),
    }
}

/// The instant a stored `DATETIME_*` count stands for; why not when jiff
/// cannot hold it (beyond ±9999 years, or finer than a nanosecond).
pub(crate) fn count_to_timestamp(count: i64, datatype: Datatype) -> Result<Timestamp, String> {
    let unit = datetime_unit(datatype)
        .ok_or_else(|| format!("{} holds no timestamps", datatype.name()))?;
    let out_of_range = || {
        format!(
            "{count} {} is not a timestamp jiff can hold exactly",
            datatype.name()
        )
    };
    let date = |years: i64, month: i64| -> Result<Timestamp, String> {
        let year = i16::try_from(1970 + years).map_err(|_| out_of_range())?;
        Date::new(year, month as i8 + 1, 1)
            .and_then(|d| d.to_zoned(jiff::tz::TimeZone::UTC))
            .map(|z| z.timestamp())
            .map_err(|_| out_of_range())
    };
    match unit {
        Unit::Year => date(count, 0),
        Unit::Month => date(count.div_euclid(12), count.rem_euclid(12)),
        unit => count_to_nanos(count, &unit)
            .and_then(|ns| Timestamp::from_nanosecond(ns).ok())
            .ok_or_else(out_of_range),
    }
}

/// The stored count of a `TIME_*` value for `duration` (since midnight).
pub(crate) fn duration_to_count(
    duration: SignedDuration,
    datatype: Datatype,
) -> Result<i64, String> {
    let unit = time_unit(datatype)
        .ok_or_else(|| format!("a duration is no value of {}", datatype.name()))?;
    nanos_to_count(duration.as_nanos(), &unit).ok_or_else(|| {
        format!(
            "{duration:?} is no whole number of {} units within 64 bits",
            datatype.name()
        )
    })
}

/// The time since midnight a stored `TIME_*` count stands for.
pub(crate) fn count_to_duration(count: i64, datatype: Datatype) -> Result<SignedDuration, String> {
    let unit = time_unit(datatype).ok_or_else(|| format!("{} holds no times", datatype.name()))?;
    count_to_nanos(count, &unit)
        .and_then(|ns| {
            let secs = i64::try_from(ns.div_euclid(NS_PER_SEC)).ok()?;
            Some(SignedDuration::new(secs, ns.rem_euclid(NS_PER_SEC) as i32))
        })
        .ok_or_else(|| {
            format!(
                "{count} {} is not a duration of whole nanoseconds",
                datatype.name()
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_date_and_time_type_has_a_unit() {
        for &dt in Datatype::ALL {
            assert_eq!(dt.is_datetime(), datetime_unit(dt).is_some(), "{dt:?}");
            assert_eq!(dt.is_time(), time_unit(dt).is_some(), "{dt:?}");
        }
    }

    #[test]
    fn round_trips_and_refusals() {
        let ts: Timestamp = "2020-03-01T00:00:00Z".parse().unwrap();
        for dt in [
            Datatype::DatetimeYear,
            Datatype::DatetimeMonth,
            Datatype::DatetimeDay,
            Datatype::DatetimeMs,
        ] {
            if dt == Datatype::DatetimeYear {
                assert!(
                    timestamp_to_count(ts, dt).is_err(),
                    "March is no whole year"
                );
                continue;
            }
            let count = timestamp_to_count(ts, dt).unwrap();
            assert_eq!(count_to_timestamp(count, dt).unwrap(), ts, "{dt:?}");
        }
        assert_eq!(
            timestamp_to_count(ts, Datatype::DatetimeMonth),
            Ok(50 * 12 + 2)
        );
        // Attoseconds reach only 1970 ± 292 years.
        let near: Timestamp = "1970-01-01T00:00:01.5Z".parse().unwrap();
        assert_eq!(
            timestamp_to_count(near, Datatype::DatetimeAs),
            Ok(1_500_000_000_000_000_000)
        );
        assert!(timestamp_to_count(ts, Datatype::DatetimeAs).is_err());
        let noon: Timestamp = "2020-03-01T12:00:00Z".parse().unwrap();
        assert!(timestamp_to_count(noon, Datatype::DatetimeDay).is_err());
        assert_eq!(
            count_to_timestamp(-1, Datatype::DatetimeMonth)
                .unwrap()
                .to_string(),
            "1969-12-01T00:00:00Z"
        );
        let d = SignedDuration::from_millis(1500);
        assert_eq!(duration_to_count(d, Datatype::TimeMs), Ok(1500));
        assert!(duration_to_count(d, Datatype::TimeSec).is_err());
        assert_eq!(count_to_duration(-1500, Datatype::TimeMs), Ok(-d));
        assert!(count_to_duration(1, Datatype::TimePs).is_err());
    }
}
