//! Synthetic data: deterministic Gaussian noise from a seed, for trying a
//! fit on data whose true parameters are known (examples, tests, studies).
//!
//! The generator is SplitMix64 (Steele, Lea and Flood, 2014) for uniform
//! numbers, turned into normal ones by the Box-Muller transform
//! `z = sqrt(-2 ln u1) cos(2 pi u2)`. The same seed gives the same numbers
//! on every machine.
//!
//! ```
//! use ia_fit::synthetic::GaussianNoise;
//! let mut noise = GaussianNoise::new(42, 0.01);
//! let a: Vec<f64> = (0..3).map(|_| noise.sample()).collect();
//! let mut again = GaussianNoise::new(42, 0.01);
//! assert_eq!(a, (0..3).map(|_| again.sample()).collect::<Vec<f64>>());
//! ```

/// Normal noise of mean 0 and standard deviation `sigma`, from a seed.
#[derive(Clone, Debug)]
pub struct GaussianNoise {
    state: u64,
    sigma: f64,
}

impl GaussianNoise {
    /// Noise of standard deviation `sigma`, its sequence fixed by `seed`.
    pub fn new(seed: u64, sigma: f64) -> Self {
        Self { state: seed, sigma }
    }

    /// The next SplitMix64 output.
    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform number in `(0, 1]` (never 0, so its logarithm is finite).
    fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    /// The next sample.
    pub fn sample(&mut self) -> f64 {
        let (u1, u2) = (self.uniform(), self.uniform());
        self.sigma * (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

#[cfg(test)]
mod tests {
    use super::GaussianNoise;

    /// Reference: the moments of the standard normal (mean 0, variance 1);
    /// with 20000 samples the sample mean's standard error is 0.007.
    #[test]
    fn samples_have_the_normal_moments() {
        let mut noise = GaussianNoise::new(7, 1.0);
        let n = 20_000;
        let xs: Vec<f64> = (0..n).map(|_| noise.sample()).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        assert!(mean.abs() < 0.03, "{mean}");
        assert!((var - 1.0).abs() < 0.05, "{var}");
    }
}
