//! A patient's events once everything is read: chosen by their window around the index,
//! aggregated into one value, or binned into a time series. Every event a row reads is
//! marked used or set aside with a reason ([`Fate`]); the extraction report counts, per
//! feature, the events no row used.
use std::cell::Cell;

use crate::cohort::{Instant, Window};
use crate::features::{Aggregate, Quantity, SeriesSpec, Value};
use crate::report::IgnoreReason;
use crate::Series;

use super::{EvValue, Event, Place, Store};

/// What became of an event over all the rows that read it: used by one of them wins over
/// any reason another row had to set it aside; the first such reason is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fate {
    Unread,
    Ignored(IgnoreReason),
    Used,
}

/// A patient's events, sorted by (slot, time), and the fates of all events (by `Event::n`).
pub(super) struct Events<'e> {
    pub(super) all: &'e [Event],
    pub(super) fates: &'e [Cell<Fate>],
}

impl<'e> Events<'e> {
    pub(super) fn of(&self, slot: usize) -> &'e [Event] {
        let s = slot as u16;
        let lo = self.all.partition_point(|e| e.slot < s);
        let hi = self.all.partition_point(|e| e.slot <= s);
        &self.all[lo..hi]
    }

    pub(super) fn used(&self, e: &Event) {
        self.fates[e.n as usize].set(Fate::Used);
    }

    pub(super) fn ignore(&self, e: &Event, why: IgnoreReason) {
        let f = &self.fates[e.n as usize];
        if f.get() == Fate::Unread {
            f.set(Fate::Ignored(why));
        }
    }
}

impl Store {
    /// The events of `slot` within `window` of `index`; an undated one counts when its status
    /// places it at the index ([`Place::AtIndex`]), the window contains the index and the
    /// source does not `require_date`. The others are marked with why they do not count.
    /// Without a window or an index, every event counts, dated or not.
    pub(super) fn select<'e>(
        &self,
        evs: &Events<'e>,
        slot: usize,
        window: Option<Window>,
        index: Option<Instant>,
    ) -> Vec<&'e Event> {
        let all = evs.of(slot);
        let (Some(w), Some(i)) = (window, index) else {
            return all.iter().collect();
        };
        let at_index = !self.matchers[slot].require_date;
        all.iter()
            .filter(|e| {
                let why = match (e.time, e.place) {
                    (Some(t), _) if w.contains(i, t) => return true,
                    (Some(_), _) => IgnoreReason::OutsideWindow,
                    (None, Place::AtIndex) if at_index && w.contains(i, i) => return true,
                    (None, Place::Inactive) if at_index => IgnoreReason::Status,
                    (None, _) => IgnoreReason::Undated,
                };
                evs.ignore(e, why);
                false
            })
            .collect()
    }
}

fn number(v: &EvValue) -> Option<f64> {
    match v {
        EvValue::Num(x, None) => Some(*x),
        EvValue::Int(i) => Some(*i as f64),
        _ => None,
    }
}

impl Store {
    fn to_value(&self, v: &EvValue, unit: Option<&str>) -> Option<Value> {
        Some(match v {
            EvValue::None => return None,
            EvValue::Num(x, c) => Value::Quantity(Quantity {
                value: *x,
                comparator: *c,
                unit: unit.map(str::to_owned),
            }),
            EvValue::Int(i) => Value::Integer(*i),
            EvValue::Bool(b) => Value::Boolean(*b),
            EvValue::Coded(i) => Value::Coded(self.coded[*i as usize].clone()),
            EvValue::Other(k) => Value::Other(k),
        })
    }

    /// `sel` aggregated; each event is marked used, or set aside when the aggregate cannot
    /// read it (no value, a value with a comparator where a number is needed, no date for a
    /// slope).
    pub(super) fn aggregate(
        &self,
        evs: &Events<'_>,
        sel: &[&Event],
        agg: Aggregate,
        unit: Option<&str>,
    ) -> Option<Value> {
        for e in sel {
            let why = match (agg, e.value) {
                (Aggregate::Count, _) => None,
                (Aggregate::Latest | Aggregate::First, EvValue::None) => Some(IgnoreReason::Value),
                (Aggregate::Latest | Aggregate::First, _) => None,
                (_, EvValue::Num(_, Some(_))) => Some(IgnoreReason::Comparator),
                (_, v) if number(&v).is_none() => Some(IgnoreReason::Value),
                (Aggregate::Slope, _) if e.time.is_none() => Some(IgnoreReason::Undated),
                _ => None,
            };
            match why {
                Some(why) => evs.ignore(e, why),
                None => evs.used(e),
            }
        }
        let quantity = |x: f64| {
            Value::Quantity(Quantity {
                value: x,
                comparator: None,
                unit: unit.map(str::to_owned),
            })
        };
        let nums = || sel.iter().filter_map(|e| number(&e.value));
        match agg {
            Aggregate::Latest => sel.iter().rev().find_map(|e| self.to_value(&e.value, unit)),
            Aggregate::First => sel.iter().find_map(|e| self.to_value(&e.value, unit)),
            Aggregate::Count => Some(Value::Integer(sel.len() as i64)),
            Aggregate::Mean => {
                let (s, n) = nums().fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
                (n > 0).then(|| quantity(s / n as f64))
            }
            Aggregate::Min => nums().reduce(f64::min).map(quantity),
            Aggregate::Max => nums().reduce(f64::max).map(quantity),
            Aggregate::Slope => {
                let pts: Vec<(f64, f64)> = sel
                    .iter()
                    .filter_map(|e| Some((e.time? as f64 / 3600.0, number(&e.value)?)))
                    .collect();
                let n = pts.len() as f64;
                if pts.len() < 2 {
                    return None;
                }
                let (mt, mv) = pts
                    .iter()
                    .fold((0.0, 0.0), |(a, b), (t, v)| (a + t / n, b + v / n));
                let sxx: f64 = pts.iter().map(|(t, _)| (t - mt).powi(2)).sum();
                let sxy: f64 = pts.iter().map(|(t, v)| (t - mt) * (v - mv)).sum();
                (sxx > 0.0).then(|| quantity(sxy / sxx))
            }
        }
    }

    pub(super) fn series(&self, s: &SeriesSpec, evs: &Events<'_>, index: Instant) -> Series {
        let steps = s.steps();
        let k = s.channels.len();
        let mut values = vec![f32::NAN; steps * k];
        let mut mask = vec![0u8; steps * k];
        for (ch, c) in s.channels.iter().enumerate() {
            let slot = self.slots.channels[ch];
            let mut bins: Vec<Vec<&Event>> = vec![Vec::new(); steps];
            for e in evs.of(slot) {
                let Some(t) = e.time else {
                    evs.ignore(e, IgnoreReason::Undated);
                    continue;
                };
                let d = t - index;
                if d < 0 || d >= s.horizon.0 {
                    evs.ignore(e, IgnoreReason::OutsideWindow);
                    continue;
                }
                bins[(d / s.bin.0) as usize].push(e);
            }
            let mut last = f32::NAN;
            for (b, sel) in bins.iter().enumerate() {
                let v = self
                    .aggregate(evs, sel, c.source.aggregate, c.unit.as_deref())
                    .and_then(|v| v.number());
                let at = b * k + ch;
                match v {
                    Some(v) => {
                        values[at] = v as f32;
                        mask[at] = 1;
                        last = v as f32;
                    }
                    // carried forward; bins before the first value stay missing until the
                    // site's training mean fills them
                    None => values[at] = last,
                }
            }
        }
        Series { values, mask }
    }
}
