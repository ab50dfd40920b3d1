//! Row-count anomalies: a partition's count against its comparable
//! neighbours (same weekday, same hour of day, surrounding months).

use crate::partition::Grain;

/// Which neighbours a partition's count is compared with: the same weekday
/// for days and the same hour of day for hours, so that quiet weekends and
/// nights are not outliers; the surrounding months for months.
#[derive(Debug, Clone, Copy)]
pub struct Seasonality {
    /// Distance between comparable partitions.
    pub stride: usize,
    /// Comparable partitions on each side.
    pub side: usize,
}

impl Seasonality {
    pub fn of(grain: Grain) -> Seasonality {
        match grain {
            Grain::Day => Seasonality { stride: 7, side: 6 },
            Grain::Hour => Seasonality {
                stride: 24,
                side: 7,
            },
            Grain::Month => Seasonality {
                stride: 1,
                side: 14,
            },
        }
    }
}

/// The counts of the partitions comparable with partition `i` (see
/// [`Seasonality`]), never `i` itself.
pub fn comparable(
    rows: &[Option<i64>],
    i: usize,
    season: Seasonality,
) -> impl Iterator<Item = i64> + '_ {
    (1..=season.side)
        .flat_map(move |k| {
            [
                i.checked_sub(k * season.stride),
                Some(i + k * season.stride),
            ]
        })
        .flatten()
        .filter_map(|j| rows.get(j).copied().flatten())
}

/// Flags counts that are outliers against comparable neighbours: robust
/// z-score `0.6745·|x − median| / MAD` above 3.5, with at least 5 neighbours.
pub fn anomalies(rows: &[Option<i64>], season: Seasonality) -> Vec<bool> {
    (0..rows.len())
        .map(|i| {
            let Some(x) = rows[i] else { return false };
            let mut around: Vec<f64> = comparable(rows, i, season).map(|n| n as f64).collect();
            if around.len() < 5 {
                return false;
            }
            let med = median(&mut around);
            let mut dev: Vec<f64> = around.iter().map(|v| (v - med).abs()).collect();
            // A perfectly flat neighbourhood still tolerates 1% of noise.
            let mad = median(&mut dev).max(med.abs() * 0.01).max(1.0);
            0.6745 * (x as f64 - med).abs() / mad > 3.5
        })
        .collect()
}

pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    let n = values.len();
    if n == 0 {
        0.0
    } else if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spike_among_steady_days_is_an_anomaly() {
        // Weekdays near 10k, weekends near 7.5k: weekends are not outliers.
        let mut rows: Vec<Option<i64>> = (0..120)
            .map(|i| Some(if i % 7 >= 5 { 7_500 } else { 10_000 } + (i % 5) * 60))
            .collect();
        rows[60] = Some(31_000);
        rows[20] = None;
        let flags = anomalies(&rows, Seasonality::of(Grain::Day));
        assert!(flags[60]);
        assert_eq!(flags.iter().filter(|f| **f).count(), 1);
    }

    #[test]
    fn too_few_neighbours_flag_nothing() {
        let rows = vec![Some(1), Some(1000), Some(1)];
        assert!(
            anomalies(&rows, Seasonality::of(Grain::Month))
                .iter()
                .all(|f| !f)
        );
    }
}
