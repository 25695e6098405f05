//! Working days, for the deadlines the regulation counts in working days: a permit, an approved
//! data request or a refusal is made public within 30 working days (Art. 57(1)(j)(iii)).
//!
//! A member state's calendar is a list of rules rather than of dates, so that it holds for any
//! year: fixed dates, offsets from Western Easter Sunday and "n-th weekday of a month". The
//! built-in calendars carry each state's nationwide public holidays; an HDAB whose state has
//! regional holidays, or one not built in, configures its own file in the same form.

use chrono::{Datelike, Duration, NaiveDate, Weekday};
use serde::{Deserialize, Serialize};

/// One public holiday rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum HolidayRule {
    /// The same date every year.
    Fixed { month: u32, day: u32 },
    /// Days after (or, negative, before) Western Easter Sunday: -2 Good Friday, 1 Easter
    /// Monday, 39 Ascension, 50 Whit Monday, 60 Corpus Christi.
    Easter { offset: i64 },
    /// The `nth` (1-5; -1 the last) `weekday` of `month`.
    NthWeekday {
        month: u32,
        weekday: Weekday,
        nth: i8,
    },
}

impl HolidayRule {
    fn date(&self, year: i32) -> Option<NaiveDate> {
        match *self {
            Self::Fixed { month, day } => NaiveDate::from_ymd_opt(year, month, day),
            Self::Easter { offset } => easter_sunday(year).map(|e| e + Duration::days(offset)),
            Self::NthWeekday {
                month,
                weekday,
                nth,
            } => {
                if nth > 0 {
                    NaiveDate::from_weekday_of_month_opt(year, month, weekday, nth as u8)
                } else {
                    let first_next = if month == 12 {
                        NaiveDate::from_ymd_opt(year + 1, 1, 1)?
                    } else {
                        NaiveDate::from_ymd_opt(year, month + 1, 1)?
                    };
                    let mut d = first_next.pred_opt()?;
                    while d.weekday() != weekday {
                        d = d.pred_opt()?;
                    }
                    Some(d)
                }
            }
        }
    }
}

/// A member state's working-day calendar: Saturdays and Sundays are never working days.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HolidayCalendar {
    /// ISO 3166-1 alpha-2 code of the member state (`GR` for Greece).
    pub member_state: String,
    /// Where the rules come from, for the HDAB's records.
    #[serde(default)]
    pub source: String,
    pub holidays: Vec<HolidayRule>,
    /// One-off closing days (a national day of mourning, say).
    #[serde(default)]
    pub extra_days: Vec<NaiveDate>,
}

/// Western (Gregorian) Easter Sunday: the anonymous Gregorian algorithm (Meeus, *Astronomical
/// Algorithms*, ch. 8).
pub fn easter_sunday(year: i32) -> Option<NaiveDate> {
    let a = year % 19;
    let b = year / 100;
    let c = year % 100;
    let d = b / 4;
    let e = b % 4;
    let f = (b + 8) / 25;
    let g = (b - f + 1) / 3;
    let h = (19 * a + b - d - g + 15) % 30;
    let i = c / 4;
    let k = c % 4;
    let l = (32 + 2 * e + 2 * i - h - k) % 7;
    let m = (a + 11 * h + 22 * l) / 451;
    let month = (h + l - 7 * m + 114) / 31;
    let day = (h + l - 7 * m + 114) % 31 + 1;
    NaiveDate::from_ymd_opt(year, month as u32, day as u32)
}

impl HolidayCalendar {
    /// The built-in calendar of `member_state`, if there is one.
    pub fn builtin(member_state: &str) -> Option<Self> {
        use HolidayRule::{Easter, Fixed};
        let fixed = |dates: &[(u32, u32)]| {
            dates
                .iter()
                .map(|&(month, day)| Fixed { month, day })
                .collect::<Vec<_>>()
        };
        let easter = |offsets: &[i64]| {
            offsets
                .iter()
                .map(|&offset| Easter { offset })
                .collect::<Vec<_>>()
        };
        let (source, mut holidays, movable) = match member_state {
            "AT" => (
                "Feiertagsruhegesetz 1957 (BGBl. 153/1957) as amended",
                fixed(&[
                    (1, 1),
                    (1, 6),
                    (5, 1),
                    (8, 15),
                    (10, 26),
                    (11, 1),
                    (12, 8),
                    (12, 25),
                    (12, 26),
                ]),
                easter(&[1, 39, 50, 60]),
            ),
            "BE" => (
                "Arrêté royal du 18 avril 1974 / Koninklijk besluit van 18 april 1974",
                fixed(&[
                    (1, 1),
                    (5, 1),
                    (7, 21),
                    (8, 15),
                    (11, 1),
                    (11, 11),
                    (12, 25),
                ]),
                easter(&[1, 39, 50]),
            ),
            "DE" => (
                "nationwide holidays (Einigungsvertrag Art. 2(2) and the Länder holiday acts)",
                fixed(&[(1, 1), (5, 1), (10, 3), (12, 25), (12, 26)]),
                easter(&[-2, 1, 39, 50]),
            ),
            "FR" => (
                "Code du travail, article L3133-1",
                fixed(&[
                    (1, 1),
                    (5, 1),
                    (5, 8),
                    (7, 14),
                    (8, 15),
                    (11, 1),
                    (11, 11),
                    (12, 25),
                ]),
                easter(&[1, 39, 50]),
            ),
            "IT" => (
                "Legge 27 maggio 1949, n. 260, as amended",
                fixed(&[
                    (1, 1),
                    (1, 6),
                    (4, 25),
                    (5, 1),
                    (6, 2),
                    (8, 15),
                    (11, 1),
                    (12, 8),
                    (12, 25),
                    (12, 26),
                ]),
                easter(&[1]),
            ),
            _ => return None,
        };
        holidays.extend(movable);
        Some(Self {
            member_state: member_state.to_owned(),
            source: source.to_owned(),
            holidays,
            extra_days: Vec::new(),
        })
    }

    /// Weekends only: for a member state without a calendar, until the HDAB configures one.
    pub fn weekends_only(member_state: &str) -> Self {
        Self {
            member_state: member_state.to_owned(),
            source: "weekends only: no holiday calendar configured".to_owned(),
            holidays: Vec::new(),
            extra_days: Vec::new(),
        }
    }

    pub fn is_holiday(&self, date: NaiveDate) -> bool {
        self.extra_days.contains(&date)
            || self
                .holidays
                .iter()
                .any(|rule| rule.date(date.year()) == Some(date))
    }

    pub fn is_working_day(&self, date: NaiveDate) -> bool {
        !matches!(date.weekday(), Weekday::Sat | Weekday::Sun) && !self.is_holiday(date)
    }

    /// The `n`-th working day after `from` (`from` itself does not count).
    pub fn add_working_days(&self, from: NaiveDate, n: u32) -> NaiveDate {
        let mut date = from;
        let mut left = n;
        while left > 0 {
            date = date.succ_opt().unwrap_or(date);
            if self.is_working_day(date) {
                left -= 1;
            }
        }
        date
    }

    /// Checks the rules produce real dates (a 30 February would never match).
    pub fn validate(&self) -> Result<(), String> {
        for rule in &self.holidays {
            // 2028 is a leap year: 29 February is accepted.
            if rule.date(2028).is_none() {
                return Err(format!("holiday rule {rule:?} names no date"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(y: i32, m: u32, day: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, day).unwrap()
    }

    #[test]
    fn easter_sunday_matches_published_dates() {
        // Dates as published in the Gregorian Easter tables.
        assert_eq!(easter_sunday(2024), Some(d(2024, 3, 31)));
        assert_eq!(easter_sunday(2025), Some(d(2025, 4, 20)));
        assert_eq!(easter_sunday(2026), Some(d(2026, 4, 5)));
        assert_eq!(easter_sunday(2027), Some(d(2027, 3, 28)));
        assert_eq!(easter_sunday(2038), Some(d(2038, 4, 25)));
    }

    #[test]
    fn french_holidays_of_2026() {
        let fr = HolidayCalendar::builtin("FR").unwrap();
        // Easter Monday 6 April, Ascension 14 May, Whit Monday 25 May
        for date in [
            d(2026, 4, 6),
            d(2026, 5, 14),
            d(2026, 5, 25),
            d(2026, 7, 14),
        ] {
            assert!(fr.is_holiday(date), "{date}");
        }
        assert!(
            !fr.is_holiday(d(2026, 4, 3)),
            "Good Friday is no French holiday"
        );
        assert!(HolidayCalendar::builtin("DE")
            .unwrap()
            .is_holiday(d(2026, 4, 3)));
    }

    #[test]
    fn thirty_working_days_skip_weekends_and_holidays() {
        let fr = HolidayCalendar::builtin("FR").unwrap();
        // From Friday 1 May 2026: May has 8 (Fri), 14 (Thu), 25 (Mon) as holidays.
        // Working days in May after the 1st: 4-7 (4), 11-13 (3), 15 (1), 18-22 (5), 26-29 (4)
        // = 17; June 1-5 (5) = 22, June 8-12 (5) = 27, June 15, 16, 17 = 30.
        assert_eq!(fr.add_working_days(d(2026, 5, 1), 30), d(2026, 6, 17));
        let plain = HolidayCalendar::weekends_only("FR");
        // Six full weeks: 30 working days after Friday 1 May is Friday 12 June.
        assert_eq!(plain.add_working_days(d(2026, 5, 1), 30), d(2026, 6, 12));
    }

    #[test]
    fn nth_weekday_rules_resolve() {
        let first_monday_of_may = HolidayRule::NthWeekday {
            month: 5,
            weekday: Weekday::Mon,
            nth: 1,
        };
        assert_eq!(first_monday_of_may.date(2026), Some(d(2026, 5, 4)));
        let last_monday_of_may = HolidayRule::NthWeekday {
            month: 5,
            weekday: Weekday::Mon,
            nth: -1,
        };
        assert_eq!(last_monday_of_may.date(2026), Some(d(2026, 5, 25)));
        let bad = HolidayCalendar {
            member_state: "IE".into(),
            source: String::new(),
            holidays: vec![HolidayRule::Fixed { month: 2, day: 30 }],
            extra_days: vec![],
        };
        assert!(bad.validate().is_err());
    }
}
