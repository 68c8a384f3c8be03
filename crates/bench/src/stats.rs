//! Sample statistics for repeated runs: mean and a 95% confidence interval
//! from Student's t, percentiles and latency histograms.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    pub stddev: f64,
    /// Half-width of the 95% confidence interval of the mean (Student's t,
    /// n-1 degrees of freedom); 0 when n < 2.
    pub ci95: f64,
    pub min: f64,
    pub median: f64,
    pub max: f64,
}

impl Summary {
    pub fn of(samples: &[f64]) -> Summary {
        let n = samples.len();
        if n == 0 {
            return Summary::default();
        }
        let mean = samples.iter().sum::<f64>() / n as f64;
        let var = if n > 1 { samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64 } else { 0.0 };
        let stddev = var.sqrt();
        let ci95 = if n > 1 { student_t_975(n - 1) * stddev / (n as f64).sqrt() } else { 0.0 };
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        Summary { n, mean, stddev, ci95, min: sorted[0], median: percentile(&sorted, 50.0), max: sorted[n - 1] }
    }
}

/// The 97.5% quantile of Student's t with `df` degrees of freedom (two-sided
/// 95% interval).
pub fn student_t_975(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::NAN,
        1..=30 => TABLE[df - 1],
        31..=40 => 2.021,
        41..=60 => 2.000,
        61..=120 => 1.980,
        _ => 1.960,
    }
}

/// The `p`th percentile (0..=100) of sorted samples, by linear interpolation.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (p / 100.0).clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let lo = rank.floor() as usize;
    let hi = rank.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo as f64)
}
