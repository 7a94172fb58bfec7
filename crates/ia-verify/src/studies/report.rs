//! Rows of the verification table: what every study returns, what
//! `cargo xtask verify` prints and writes (CSV and JSON).
//!
//! A [`Row`] is one compared number: its `value`, the `reference` it is
//! compared with, the `error` under the rule the study documents, and the
//! [`Verdict`]. Studies that only show a trend (a point of a convergence
//! curve) mark their rows [`Verdict::Info`]; their checked summary row says
//! whether the trend holds.
//!
//! ```
//! use ia_verify::report::{summary, Row, Verdict};
//! let rows = vec![
//!     Row::check("demo", "case", "x(T)", 1.0, 1.0, 0.0, true),
//!     Row::info("demo", "case", "x(T) at a loose tolerance", 1.1, 1.0, 0.1),
//! ];
//! let s = summary(&rows);
//! assert_eq!((s.pass, s.fail, s.info), (1, 0, 1));
//! assert!(ia_verify::report::to_csv(&rows).starts_with("study,case,quantity"));
//! ```

use serde::{Deserialize, Serialize};
use std::fmt;

/// The outcome of a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The check holds.
    Pass,
    /// The check fails: `cargo xtask verify` exits non-zero.
    Fail,
    /// Not a check: a point of a curve, shown for information.
    Info,
}

impl Verdict {
    /// `"pass"`, `"fail"` or `"info"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Info => "info",
        }
    }

    /// [`Verdict::Pass`] when `ok`, else [`Verdict::Fail`].
    pub fn from_check(ok: bool) -> Self {
        if ok {
            Verdict::Pass
        } else {
            Verdict::Fail
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One row of the verification table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// The study (`reference`, `fd`, `partials`, `three_ways`, ...).
    pub study: String,
    /// The case: a reference case, a model, a model at a setting.
    pub case: String,
    /// What is compared, by name (the worst entry of a group names itself).
    pub quantity: String,
    /// The value computed.
    pub value: f64,
    /// The value it is compared with (NaN where there is none).
    pub reference: f64,
    /// The error under the study's rule (NaN where there is none).
    pub error: f64,
    /// The outcome.
    pub verdict: Verdict,
}

impl Row {
    /// A checked row: [`Verdict::Pass`] when `ok`.
    pub fn check(
        study: impl Into<String>,
        case: impl Into<String>,
        quantity: impl Into<String>,
        value: f64,
        reference: f64,
        error: f64,
        ok: bool,
    ) -> Self {
        Self {
            study: study.into(),
            case: case.into(),
            quantity: quantity.into(),
            value,
            reference,
            error,
            verdict: Verdict::from_check(ok),
        }
    }

    /// A row shown for information, not checked.
    pub fn info(
        study: impl Into<String>,
        case: impl Into<String>,
        quantity: impl Into<String>,
        value: f64,
        reference: f64,
        error: f64,
    ) -> Self {
        Self {
            verdict: Verdict::Info,
            ..Self::check(study, case, quantity, value, reference, error, true)
        }
    }

    /// A failed row for a check that could not run; `why` goes into the
    /// quantity column.
    pub fn failure(
        study: impl Into<String>,
        case: impl Into<String>,
        quantity: impl Into<String>,
        why: impl fmt::Display,
    ) -> Self {
        Self {
            study: study.into(),
            case: case.into(),
            quantity: format!("{}: {why}", quantity.into()),
            value: f64::NAN,
            reference: f64::NAN,
            error: f64::NAN,
            verdict: Verdict::Fail,
        }
    }

    /// Whether the row failed.
    pub fn failed(&self) -> bool {
        self.verdict == Verdict::Fail
    }
}

/// Counts of rows by verdict.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    /// Rows that passed.
    pub pass: usize,
    /// Rows that failed.
    pub fail: usize,
    /// Rows shown for information.
    pub info: usize,
}

/// Counts `rows` by verdict.
pub fn summary(rows: &[Row]) -> Summary {
    let mut s = Summary::default();
    for r in rows {
        match r.verdict {
            Verdict::Pass => s.pass += 1,
            Verdict::Fail => s.fail += 1,
            Verdict::Info => s.info += 1,
        }
    }
    s
}

/// A number as the table and the CSV write it: shortest round-trip form for
/// exact small values, scientific otherwise; `-` for NaN.
pub fn format_number(v: f64) -> String {
    if v.is_nan() {
        "-".to_string()
    } else if v == 0.0 {
        if v.is_sign_negative() {
            "-0".to_string()
        } else {
            "0".to_string()
        }
    } else if v.is_infinite() {
        if v > 0.0 { "inf" } else { "-inf" }.to_string()
    } else {
        format!("{v:.6e}")
    }
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn csv_number(v: f64) -> String {
    if v.is_nan() {
        String::new()
    } else {
        // Round-trip exact.
        format!("{v:e}")
    }
}

/// The rows as CSV, with a header line `study,case,quantity,value,reference,error,verdict`;
/// numbers in round-trip scientific form, an empty field for NaN.
pub fn to_csv(rows: &[Row]) -> String {
    let mut out = String::from("study,case,quantity,value,reference,error,verdict\n");
    for r in rows {
        out.push_str(&format!(
            "{},{},{},{},{},{},{}\n",
            csv_field(&r.study),
            csv_field(&r.case),
            csv_field(&r.quantity),
            csv_number(r.value),
            csv_number(r.reference),
            csv_number(r.error),
            r.verdict
        ));
    }
    out
}

/// The rows as a plain-text table with aligned columns (the one table
/// `cargo xtask verify` prints).
pub fn to_table(rows: &[Row]) -> String {
    let header = [
        "study",
        "case",
        "quantity",
        "value",
        "reference",
        "error",
        "verdict",
    ];
    let cells: Vec<[String; 7]> = rows
        .iter()
        .map(|r| {
            [
                r.study.clone(),
                r.case.clone(),
                r.quantity.clone(),
                format_number(r.value),
                format_number(r.reference),
                format_number(r.error),
                r.verdict.to_string(),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &cells {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cols: &[String; 7]| {
        let mut s = String::new();
        for (i, (c, w)) in cols.iter().zip(widths).enumerate() {
            let numeric = (3..6).contains(&i);
            let pad = w - c.chars().count();
            if i > 0 {
                s.push_str("  ");
            }
            if numeric {
                s.push_str(&" ".repeat(pad));
                s.push_str(c);
            } else {
                s.push_str(c);
                if i + 1 < cols.len() {
                    s.push_str(&" ".repeat(pad));
                }
            }
        }
        s.push('\n');
        s
    };
    let mut out = line(&header.map(String::from));
    let total: usize = widths.iter().sum::<usize>() + 2 * (widths.len() - 1);
    out.push_str(&"-".repeat(total));
    out.push('\n');
    for row in &cells {
        out.push_str(&line(row));
    }
    out
}

/// The relative error `|v - r| / |r|` where `|r| >= floor`, the absolute
/// error `|v - r|` below it (the rule of [`crate::references::reference_error`]).
pub fn mixed_error(value: f64, reference: f64, floor: f64) -> f64 {
    crate::references::reference_error(value, reference, floor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_commas_and_writes_nan_empty() {
        let rows = vec![Row::failure("s", "a,b", "q", "broke \"here\"")];
        let csv = to_csv(&rows);
        let line = csv.lines().nth(1).unwrap();
        assert_eq!(line, "s,\"a,b\",\"q: broke \"\"here\"\"\",,,,fail");
    }

    #[test]
    fn table_aligns_columns() {
        let rows = vec![
            Row::check("reference", "ball2d_flat_a", "x(T)", 1.0, 1.0, 0.0, true),
            Row::info("conv", "lif_a", "J", 2.0, 1.0, 1.0),
        ];
        let t = to_table(&rows);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 4);
        assert!(lines[2].ends_with("pass"));
        assert!(lines[3].ends_with("info"));
    }
}
