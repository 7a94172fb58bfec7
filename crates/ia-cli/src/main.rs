//! The `impact-adjoint` command line; see the `ia_cli` crate documentation
//! for the commands, the scenario format and the output format.

use clap::{error::ErrorKind, Parser, Subcommand, ValueEnum};
use ia_cli::{CliError, GradientMethod};
use std::io::{Read, Write};
use std::process::ExitCode;

/// Exact derivatives through hybrid (event-driven) simulation: runs a
/// scenario file of a ready model and prints JSON.
#[derive(Debug, Parser)]
#[command(name = "impact-adjoint", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List the ready models: states, parameters, modes and defaults.
    Models {
        /// Print a JSON array of the model descriptions instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Run a scenario and print the trajectory as JSON.
    Simulate {
        /// Scenario file (JSON); `-` reads standard input.
        file: String,
        /// Print the JSON on one line instead of indented.
        #[arg(long)]
        compact: bool,
    },
    /// Run a scenario with sensitivities and print the trajectory and its
    /// Jacobians as JSON.
    Gradient {
        /// Scenario file (JSON); `-` reads standard input.
        file: String,
        /// How the sensitivities are computed.
        #[arg(long, value_enum, default_value_t = MethodArg::Forward)]
        method: MethodArg,
        /// With a `loss` in the scenario and `--method adjoint`, also print
        /// the per-output Jacobians (one backward pass per output row).
        #[arg(long)]
        jacobian: bool,
        /// Print the JSON on one line instead of indented.
        #[arg(long)]
        compact: bool,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum MethodArg {
    /// Forward sensitivities integrated with the state.
    Forward,
    /// The discrete adjoint (built-in solvers only).
    Adjoint,
}

/// The largest scenario read, in bytes: a scenario is a few hundred bytes,
/// and `/dev/zero` must not be read forever.
const MAX_SCENARIO_BYTES: u64 = 16 * 1024 * 1024;

fn read_limited(reader: impl Read, what: &str) -> Result<String, CliError> {
    let mut bytes = Vec::new();
    reader
        .take(MAX_SCENARIO_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| CliError::Io(format!("cannot read {what}: {e}")))?;
    if bytes.len() as u64 > MAX_SCENARIO_BYTES {
        return Err(CliError::Io(format!(
            "{what} is larger than {} MiB: a scenario is a small JSON object (is this the right file?)",
            MAX_SCENARIO_BYTES / (1024 * 1024)
        )));
    }
    String::from_utf8(bytes).map_err(|e| {
        CliError::Io(format!(
            "{what} is not UTF-8 text (invalid byte at offset {}): a scenario is a JSON object",
            e.utf8_error().valid_up_to()
        ))
    })
}

fn read_scenario(file: &str) -> Result<(String, String), CliError> {
    if file == "-" {
        let text = read_limited(std::io::stdin().lock(), "the scenario from standard input")?;
        Ok((text, "standard input".to_string()))
    } else {
        let what = format!("the scenario file '{file}'");
        let handle = std::fs::File::open(file)
            .map_err(|e| CliError::Io(format!("cannot read {what}: {e}")))?;
        let text = read_limited(handle, &what)?;
        Ok((text, format!("'{file}'")))
    }
}

/// The document as printed: indented, or on one line with `--compact`.
fn laid_out(document: String, compact: bool) -> String {
    if compact {
        ia_cli::compact_json(&document)
    } else {
        document
    }
}

fn execute(command: Command) -> Result<String, CliError> {
    match command {
        Command::Models { json: true } => Ok(ia_cli::models_json()),
        Command::Models { json: false } => Ok(ia_cli::models_table()),
        Command::Simulate { file, compact } => {
            let (text, source) = read_scenario(&file)?;
            ia_cli::simulate(&text, &source).map(|out| laid_out(out, compact))
        }
        Command::Gradient {
            file,
            method,
            jacobian,
            compact,
        } => {
            let (text, source) = read_scenario(&file)?;
            let method = match method {
                MethodArg::Forward => GradientMethod::Forward,
                MethodArg::Adjoint => GradientMethod::Adjoint,
            };
            ia_cli::gradient_with(&text, &source, method, jacobian)
                .map(|out| laid_out(out, compact))
        }
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version go to standard output and exit 0; usage
            // errors print one line, `error: usage: <clap's first line>; see
            // impact-adjoint --help`, and exit 2.
            if !e.use_stderr() {
                let _ = e.print();
                return ExitCode::SUCCESS;
            }
            let message = if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                "no command given; commands: models, simulate, gradient; see impact-adjoint --help"
                    .to_string()
            } else {
                usage_line(&e.to_string())
            };
            eprintln!("error: usage: {message}");
            return ExitCode::from(2);
        }
    };
    match execute(cli.command) {
        Ok(mut text) => {
            if !text.ends_with('\n') {
                text.push('\n');
            }
            let mut stdout = std::io::stdout().lock();
            match stdout
                .write_all(text.as_bytes())
                .and_then(|()| stdout.flush())
            {
                Ok(()) => ExitCode::SUCCESS,
                // A closed pipe (`| head`) is the reader's choice, not a failure.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error: io: cannot write the output: {e}");
                    ExitCode::from(2)
                }
            }
        }
        Err(e) => {
            let message = e.to_string().replace('\n', " ");
            eprintln!("error: {}: {message}", e.kind());
            ExitCode::from(2)
        }
    }
}

/// Clap's usage error as one line: its message (without its own `error: `
/// prefix) and its tip, then where to find the usage.
fn usage_line(clap_message: &str) -> String {
    let mut parts: Vec<&str> = clap_message
        .lines()
        .map(str::trim)
        .filter(|l| {
            !l.is_empty() && !l.starts_with("Usage:") && !l.starts_with("For more information")
        })
        .collect();
    if let Some(first) = parts.first_mut() {
        *first = first.strip_prefix("error: ").unwrap_or(first);
    }
    let mut line = String::new();
    for part in parts {
        if !line.is_empty() {
            line.push_str(if line.ends_with(':') { " " } else { "; " });
        }
        line.push_str(part);
    }
    line.push_str("; see impact-adjoint --help");
    line
}
