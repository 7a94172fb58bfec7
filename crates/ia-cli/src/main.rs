//! The `impact-adjoint` command line; see the `ia_cli` crate documentation
//! for the commands, the scenario format and the output format.

use clap::{error::ErrorKind, Parser, Subcommand, ValueEnum};
use ia_cli::{CliError, Commands, GradientMethod, ProgressHook};
use std::io::{IsTerminal, Read, Write};
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Exact derivatives through hybrid (event-driven) simulation: runs a
/// scenario file of a ready model and prints JSON.
#[derive(Debug, Parser)]
#[command(name = "impact-adjoint", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Show no progress line (one is shown on a terminal's standard error
    /// for runs longer than a second, never on a pipe).
    #[arg(long, global = true)]
    quiet: bool,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List the ready models: states, parameters, modes and defaults.
    Models {
        /// Print a JSON array of the model descriptions instead of a table.
        #[arg(long)]
        json: bool,
        /// Instead, print how the model written as equations in FILE (the
        /// model's JSON, or a scenario whose `model` is one; `-` reads
        /// standard input) was understood, each expression printed back.
        #[arg(long, value_name = "FILE", conflicts_with = "json")]
        equations: Option<String>,
    },
    /// Run a scenario and print the trajectory as JSON.
    Simulate {
        /// Scenario file (JSON; its keys: docs/scenario.md); `-` reads standard input.
        file: String,
        /// Print the JSON on one line instead of indented.
        #[arg(long)]
        compact: bool,
    },
    /// Run a scenario with sensitivities and print the trajectory and its
    /// Jacobians as JSON.
    Gradient {
        /// Scenario file (JSON; its keys: docs/scenario.md); `-` reads standard input.
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
    /// Find the periodic orbit through the section of a transition (the
    /// scenario's `section`) and print its fixed point, period, monodromy,
    /// Floquet multipliers and their parameter derivatives as JSON.
    Periodic {
        /// Scenario file (JSON; its keys: docs/scenario.md); `-` reads standard input.
        file: String,
        /// Print the JSON on one line instead of indented.
        #[arg(long)]
        compact: bool,
    },
    /// Fit the scenario's free variables to its data (its `fit` key) and
    /// print the fitted values and their standard errors as JSON.
    Fit {
        /// Scenario file (JSON; its keys: docs/scenario.md); `-` reads standard input.
        file: String,
        /// Print the JSON on one line instead of indented.
        #[arg(long)]
        compact: bool,
    },
    /// Run many scenarios in parallel: JSON Lines in (a command and its
    /// scenario a line), JSON Lines out in input order.
    Batch {
        /// JSON Lines file; `-` reads standard input.
        file: String,
        /// Worker threads (default: one per core; at most 256).
        #[arg(long, default_value_t = 0, hide_default_value = true)]
        jobs: usize,
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

fn read_limited(reader: impl Read, what: &str, limit: u64) -> Result<String, CliError> {
    let mut bytes = Vec::new();
    reader
        .take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| CliError::Io(format!("cannot read {what}: {e}")))?;
    if bytes.len() as u64 > limit {
        return Err(CliError::Io(format!(
            "{what} is larger than {} MiB: a scenario is a small JSON object (is this the right file?)",
            limit / (1024 * 1024)
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
    read_input(file, "scenario", MAX_SCENARIO_BYTES)
}

/// The text of `file` (`-`: standard input), at most `limit` bytes, and its
/// name for messages; `kind` names the contents (`scenario`).
fn read_input(file: &str, kind: &str, limit: u64) -> Result<(String, String), CliError> {
    if file == "-" {
        let what = format!("the {kind} from standard input");
        let text = read_limited(std::io::stdin().lock(), &what, limit)?;
        Ok((text, "standard input".to_string()))
    } else {
        let what = format!("the {kind} file '{file}'");
        let handle = std::fs::File::open(file)
            .map_err(|e| CliError::Io(format!("cannot read {what}: {e}")))?;
        let text = read_limited(handle, &what, limit)?;
        Ok((text, format!("'{file}'")))
    }
}

/// `impact-adjoint batch`: streams its output lines to standard output as
/// each chunk of input lines finishes.
fn stream_batch(file: &str, jobs: usize) -> Result<(), CliError> {
    let mut stdout = std::io::stdout().lock();
    if file == "-" {
        let stdin = std::io::stdin().lock();
        ia_cli::batch::batch_to(stdin, "standard input", jobs, &mut stdout)
    } else {
        let handle = std::fs::File::open(file)
            .map_err(|e| CliError::Io(format!("cannot read the JSON Lines file '{file}': {e}")))?;
        let input = std::io::BufReader::new(handle);
        ia_cli::batch::batch_to(input, &format!("'{file}'"), jobs, &mut stdout)
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

/// Runs `command`, its runs reporting to `commands`' progress hook.
fn execute(command: Command, commands: &Commands) -> Result<String, CliError> {
    match command {
        Command::Models {
            equations: Some(file),
            ..
        } => {
            let (text, source) = read_scenario(&file)?;
            ia_cli::describe_equations(&text, &source)
        }
        Command::Models { json: true, .. } => Ok(ia_cli::models_json()),
        Command::Models { json: false, .. } => Ok(ia_cli::models_table()),
        Command::Simulate { file, compact } => {
            let (text, source) = read_scenario(&file)?;
            commands
                .simulate(&text, &source)
                .map(|out| laid_out(out, compact))
        }
        Command::Periodic { file, compact } => {
            let (text, source) = read_scenario(&file)?;
            commands
                .periodic(&text, &source)
                .map(|out| laid_out(out, compact))
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
            commands
                .gradient(&text, &source, method, jacobian)
                .map(|out| laid_out(out, compact))
        }
        Command::Fit { file, compact } => {
            let (text, source) = read_scenario(&file)?;
            commands
                .fit(&text, &source)
                .map(|out| laid_out(out, compact))
        }
        // Written line by line as the chunks finish, not as one document.
        Command::Batch { file, jobs } => stream_batch(&file, jobs).map(|()| String::new()),
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
                "no command given; commands: models, simulate, gradient, periodic, fit, batch; see impact-adjoint --help"
                    .to_string()
            } else {
                usage_line(&e.to_string())
            };
            eprintln!("error: usage: {message}");
            return ExitCode::from(2);
        }
    };
    // A batch's runs are many and parallel: no progress line for one of them.
    let batch = matches!(cli.command, Command::Batch { .. });
    let progress =
        (!cli.quiet && !batch && std::io::stderr().is_terminal()).then(ProgressLine::install);
    let commands = match progress {
        Some(line) => Commands::new().with_progress(ProgressHook(std::sync::Arc::new(
            move |p: &ia_events::Progress| line.draw(p),
        ))),
        None => Commands::new(),
    };
    let result = execute(cli.command, &commands);
    if let Some(line) = progress {
        line.clear();
    }
    match result {
        // A batch has written its output already.
        Ok(text) if text.is_empty() => ExitCode::SUCCESS,
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

/// The progress line on standard error: shown once a run has taken a
/// second, redrawn at most five times a second, cleared at the end.
struct ProgressLine {
    started: Instant,
    /// When the line was last drawn, if it has been.
    drawn: Mutex<Option<Instant>>,
}

impl ProgressLine {
    /// A new line, not drawn yet (the commands' progress hook draws it).
    fn install() -> &'static ProgressLine {
        let line: &'static ProgressLine = Box::leak(Box::new(ProgressLine {
            started: Instant::now(),
            drawn: Mutex::new(None),
        }));
        line
    }

    fn draw(&self, p: &ia_events::Progress) {
        let now = Instant::now();
        if now - self.started < Duration::from_secs(1) {
            return;
        }
        let Ok(mut drawn) = self.drawn.lock() else {
            return;
        };
        if drawn.is_some_and(|at| now - at < Duration::from_millis(200)) {
            return;
        }
        *drawn = Some(now);
        eprint!(
            "\r\x1b[K{:5.1} %  t = {:.5e} of {}  {} events  {} steps  {:.0} s",
            100.0 * p.fraction(),
            p.time,
            ia_core::short_num(p.t_end),
            p.events,
            p.steps,
            (now - self.started).as_secs_f64()
        );
    }

    /// Erases the line if it was drawn.
    fn clear(&self) {
        if self.drawn.lock().map(|d| d.is_some()).unwrap_or(false) {
            eprint!("\r\x1b[K");
        }
    }
}
