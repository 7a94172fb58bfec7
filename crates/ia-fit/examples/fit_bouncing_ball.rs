//! Fit `g` and `e` of a bouncing ball to noisy heights.
//!
//! Heights of a ball dropped from 1 m (ball1d, g = 9.81, e = 0.8) at 40
//! times over 1.5 s, with Gaussian noise of 1 cm from a fixed seed, are
//! fitted from g = 9, e = 0.7 by L-BFGS with adjoint gradients; the fitted
//! values must lie within three standard errors of the truth. The figure
//! of the data and the fitted trajectory is written to
//! `<target>/ia-fit/fit_bouncing_ball.svg`.
//!
//! ```text
//! cargo run -p ia-fit --example fit_bouncing_ball
//! ```
//!
//! It also runs in the test suite (`cargo test -p ia-fit --examples`).

use ia_adjoint::prelude::*;
use ia_fit::synthetic::GaussianNoise;
use ia_fit::{Datum, FitOptions, FitProblem, FitResult};
use plotters::prelude::*;
use std::error::Error;
use std::path::{Path, PathBuf};

const TRUTH: [f64; 2] = [9.81, 0.8];
const SIGMA: f64 = 0.01;
const T_END: f64 = 1.5;
const FAMILY: &str = "sans-serif";
const FONT: &[u8] = include_bytes!("../../../xtask/assets/DejaVuSans-subset.ttf");

fn problem(system: &HybridSystem, g: f64, e: f64) -> Problem<'_> {
    Problem::new(system, vec![1.0, 0.0], vec![g, e, 0.0], T_END)
        .with_solver(SolverChoice::dopri5(1e-12))
}

/// The heights `h(t) + noise` at 40 times in `(0, 1.5]`.
fn noisy_heights(system: &HybridSystem) -> Result<Vec<Datum>, HybridError> {
    let times: Vec<f64> = (1..=40).map(|i| i as f64 * T_END / 40.0).collect();
    let run = ia_adjoint::ia_events::simulate(
        &problem(system, TRUTH[0], TRUTH[1]).with_observations(times),
    )?;
    let mut noise = GaussianNoise::new(11, SIGMA);
    Ok(run
        .observations
        .iter()
        .map(|o| Datum::new(o.time, "h", o.state[0] + noise.sample()))
        .collect())
}

/// The target directory: this executable is `<target>/<profile>/examples/<name>`
/// (or one level deeper under `deps` when run as a test). Cargo marks the
/// directory it made with `CACHEDIR.TAG`; one it found made already (a
/// copied build) may lack the tag, and is then found by the profile
/// directory's parent. Never the working directory: a test runs in the
/// crate's source directory, which must stay clean.
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    exe.ancestors()
        .find(|dir| dir.join("CACHEDIR.TAG").exists())
        .or_else(|| {
            exe.ancestors()
                .find(|dir| dir.file_name().is_some_and(|name| name == "examples"))
                .and_then(Path::parent)
                .and_then(Path::parent)
        })
        .map_or_else(std::env::temp_dir, Path::to_path_buf)
}

fn run() -> Result<(FitResult, PathBuf), Box<dyn Error>> {
    let model = ia_models::by_name("ball1d")?;
    let system = model.system();
    let data = noisy_heights(&system)?;
    let fit = FitProblem::new(problem(&system, 9.0, 0.7), &["param.g", "param.e"], data)?
        .with_bounds("param.e", Some(0.0), Some(1.0))?
        .with_bounds("param.g", Some(0.0), None)?;
    let result = fit.fit(&FitOptions::default())?;
    for ((name, value), se) in result
        .names
        .iter()
        .zip(&result.values)
        .zip(&result.standard_errors)
    {
        println!("{name} = {value:.5} +- {se:.5}");
    }
    println!(
        "loss {:.3e}, |gradient| {:.1e}, {} iterations ({})",
        result.loss, result.gradient_norm, result.iterations, result.termination
    );
    for ((value, se), truth) in result.values.iter().zip(&result.standard_errors).zip(TRUTH) {
        if (value - truth).abs() > 3.0 * se {
            return Err(format!(
                "fitted {value} is more than 3 standard errors ({se}) from {truth}"
            )
            .into());
        }
    }
    let dir = target_dir().join("ia-fit");
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("fit_bouncing_ball.svg");
    let curve: Vec<f64> = (1..=400).map(|i| i as f64 * T_END / 400.0).collect();
    let fitted =
        ia_adjoint::ia_events::simulate(&fit.problem_at(&result.values).with_observations(curve))?;
    let line: Vec<(f64, f64)> = fitted
        .observations
        .iter()
        .map(|o| (o.time, o.state[0]))
        .collect();
    let points: Vec<(f64, f64)> = fit.data().iter().map(|d| (d.time, d.value)).collect();
    draw(&path, &points, &line, &result)?;
    println!("figure: {}", path.display());
    Ok((result, path))
}

fn draw(
    path: &Path,
    points: &[(f64, f64)],
    line: &[(f64, f64)],
    result: &FitResult,
) -> Result<(), Box<dyn Error>> {
    plotters::style::register_font(FAMILY, FontStyle::Normal, FONT)
        .map_err(|_| "the embedded font is not a valid OpenType font")?;
    let root = SVGBackend::new(path, (900, 520)).into_drawing_area();
    root.fill(&WHITE)?;
    let title = format!(
        "ball1d: g = {:.3} +- {:.3}, e = {:.4} +- {:.4} (truth 9.81, 0.8)",
        result.values[0], result.standard_errors[0], result.values[1], result.standard_errors[1]
    );
    let mut chart = ChartBuilder::on(&root)
        .caption(title, (FAMILY, 20))
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..T_END, -0.05..1.1)?;
    chart
        .configure_mesh()
        .x_desc("t [s]")
        .y_desc("h [m]")
        .label_style((FAMILY, 14))
        .axis_desc_style((FAMILY, 16))
        .draw()?;
    let blue = RGBColor(31, 119, 180);
    let red = RGBColor(214, 39, 40);
    chart
        .draw_series(LineSeries::new(line.iter().copied(), blue.stroke_width(2)))?
        .label("fitted trajectory")
        .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], blue.stroke_width(2)));
    chart
        .draw_series(points.iter().map(|&p| Circle::new(p, 3, red.filled())))?
        .label("noisy heights (sigma = 1 cm)")
        .legend(move |(x, y)| Circle::new((x + 10, y), 3, red.filled()));
    chart
        .configure_series_labels()
        .label_font((FAMILY, 14))
        .border_style(BLACK)
        .background_style(WHITE)
        .draw()?;
    root.present()?;
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    run().map(|_| ())
}

#[cfg(test)]
mod tests {
    /// The example's own check (the truth within three standard errors)
    /// and its figure, in the test suite.
    #[test]
    fn the_example_runs_and_writes_its_figure() {
        let (result, path) = super::run().unwrap();
        assert_eq!(result.names, ["param.g", "param.e"]);
        let svg = std::fs::read_to_string(path).unwrap();
        assert!(svg.contains("<svg") && svg.contains("fitted trajectory"));
    }
}
