//! Developer tasks of impact-adjoint.
//!
//! ```text
//! cargo xtask verify [--quick] [--out DIR]
//! cargo xtask test [--python]
//! ```
//!
//! `verify` runs every verification study of `ia_verify::suite` (progress on
//! stderr, one line per study), prints one table (study, case, quantity,
//! value, reference, error, verdict), writes the rows as CSV and JSON and the
//! three-ways figure as SVG and PNG under `target/verify/` (or `--out`), and
//! exits non-zero when any check fails. `--quick` runs the CI subset.
//!
//! `test` runs every test: `cargo test --workspace`, then the Python package
//! built and tested in a virtual environment under `target/` (see
//! [`mod@test`]).

mod figure;
mod test;

use ia_verify::report::{self, Row};
use ia_verify::suite::{self, SuiteOptions};
use ia_verify::three_ways::ThreeWaysPoint;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

const USAGE: &str = "\
usage: cargo xtask <task>

tasks:
  verify [--quick] [--out DIR]   run every verification study; print one table;
                                 write rows (CSV, JSON) and figures (SVG, PNG)
                                 under DIR (default: target/verify); exit 1 on
                                 any failed check. --quick: the CI subset.
  test [--python]                cargo test --workspace, then the Python tests:
                                 a venv under target/ (maturin, numpy, jax,
                                 dask, optax, pytest from the package index), the
                                 wheel built and installed, pytest python/tests.
                                 --python: the Python half only.
  help                           this text";

struct VerifyArgs {
    quick: bool,
    out: PathBuf,
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lies in the workspace root")
        .to_path_buf()
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
}

fn default_out() -> PathBuf {
    target_dir().join("verify")
}

fn parse_verify(args: &[String]) -> Result<VerifyArgs, String> {
    let mut parsed = VerifyArgs {
        quick: false,
        out: default_out(),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--quick" => parsed.quick = true,
            "--out" => {
                parsed.out = it
                    .next()
                    .map(PathBuf::from)
                    .ok_or("--out needs a directory")?;
            }
            other => return Err(format!("unknown argument '{other}' for verify")),
        }
    }
    Ok(parsed)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("verify") => match parse_verify(&args[1..]) {
            Ok(v) => verify(&v),
            Err(e) => {
                eprintln!("error: {e}\n\n{USAGE}");
                ExitCode::from(2)
            }
        },
        Some("test") => test::run(&workspace_root(), &target_dir(), &args[1..]),
        Some("help") | Some("--help") | Some("-h") => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        Some(other) => {
            eprintln!("error: unknown task '{other}'\n\n{USAGE}");
            ExitCode::from(2)
        }
        None => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}

#[derive(Serialize)]
struct RowsFile<'a> {
    quick: bool,
    summary: report::Summary,
    study_seconds: &'a [(String, f64)],
    rows: &'a [Row],
}

fn three_ways_csv(points: &[ThreeWaysPoint]) -> String {
    let mut out = String::from(
        "case,method,dt,quantity,value,reference,abs_error,rel_error,max_abs_error_gradient,verdict\n",
    );
    for p in points {
        out.push_str(&format!(
            "{},{},{:e},{},{:e},{:e},{:e},{:e},{:e},{}\n",
            p.case,
            p.method.as_str(),
            p.dt,
            p.quantity,
            p.value,
            p.reference,
            p.abs_error,
            p.rel_error,
            p.max_abs_error_gradient,
            p.verdict
        ));
    }
    out
}

fn write(path: &Path, contents: &[u8], written: &mut Vec<PathBuf>) -> Result<(), String> {
    std::fs::write(path, contents).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    written.push(path.to_path_buf());
    Ok(())
}

fn write_outputs(
    args: &VerifyArgs,
    result: &suite::SuiteResult,
    summary: report::Summary,
) -> Result<Vec<PathBuf>, String> {
    let out = &args.out;
    std::fs::create_dir_all(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let mut written = Vec::new();
    write(
        &out.join("rows.csv"),
        report::to_csv(&result.rows).as_bytes(),
        &mut written,
    )?;
    let rows_file = RowsFile {
        quick: args.quick,
        summary,
        study_seconds: &result.study_seconds,
        rows: &result.rows,
    };
    let json = serde_json::to_string_pretty(&rows_file).map_err(|e| e.to_string())?;
    write(&out.join("rows.json"), json.as_bytes(), &mut written)?;
    write(
        &out.join("three_ways.csv"),
        three_ways_csv(&result.three_ways).as_bytes(),
        &mut written,
    )?;
    let json = serde_json::to_string_pretty(&result.three_ways).map_err(|e| e.to_string())?;
    write(&out.join("three_ways.json"), json.as_bytes(), &mut written)?;
    if !result.three_ways.is_empty() {
        for ext in ["svg", "png"] {
            let path = out.join(format!("three_ways.{ext}"));
            figure::three_ways(&path, &result.three_ways)
                .map_err(|e| format!("cannot draw {}: {e}", path.display()))?;
            written.push(path);
        }
    }
    Ok(written)
}

fn verify(args: &VerifyArgs) -> ExitCode {
    let start = Instant::now();
    eprintln!(
        "verify{}: every study, release build; progress below, the table on stdout",
        if args.quick { " --quick" } else { "" }
    );
    let mut progress = |line: &str| {
        eprintln!("[{:6.1} s] {line}", start.elapsed().as_secs_f64());
    };
    let result = suite::run(&SuiteOptions { quick: args.quick }, &mut progress);
    let summary = report::summary(&result.rows);
    print!("{}", report::to_table(&result.rows));
    println!(
        "\n{} rows: {} pass, {} fail, {} info (information only); {:.1} s",
        result.rows.len(),
        summary.pass,
        summary.fail,
        summary.info,
        start.elapsed().as_secs_f64()
    );
    let mut ok = summary.fail == 0;
    match write_outputs(args, &result, summary) {
        Ok(paths) => {
            println!("written:");
            for p in paths {
                println!("  {}", p.display());
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            ok = false;
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        for r in result.rows.iter().filter(|r| r.failed()) {
            eprintln!("FAILED: {} / {} / {}", r.study, r.case, r.quantity);
        }
        ExitCode::FAILURE
    }
}
