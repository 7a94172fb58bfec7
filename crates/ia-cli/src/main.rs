//! The `impact-adjoint` command line; see the `ia_cli` crate documentation
//! for the commands, the scenario format and the output format.

use clap::{Parser, Subcommand, ValueEnum};
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
    },
    /// Run a scenario with sensitivities and print the trajectory and its
    /// Jacobians as JSON.
    Gradient {
        /// Scenario file (JSON); `-` reads standard input.
        file: String,
        /// How the sensitivities are computed.
        #[arg(long, value_enum, default_value_t = MethodArg::Forward)]
        method: MethodArg,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum MethodArg {
    /// Forward sensitivities integrated with the state.
    Forward,
    /// The discrete adjoint (built-in solvers only).
    Adjoint,
}

fn read_scenario(file: &str) -> Result<(String, String), CliError> {
    if file == "-" {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).map_err(|e| {
            CliError::Io(format!("cannot read the scenario from standard input: {e}"))
        })?;
        Ok((text, "standard input".to_string()))
    } else {
        let text = std::fs::read_to_string(file)
            .map_err(|e| CliError::Io(format!("cannot read the scenario file '{file}': {e}")))?;
        Ok((text, format!("'{file}'")))
    }
}

fn execute(command: Command) -> Result<String, CliError> {
    match command {
        Command::Models { json: true } => Ok(ia_cli::models_json()),
        Command::Models { json: false } => Ok(ia_cli::models_table()),
        Command::Simulate { file } => {
            let (text, source) = read_scenario(&file)?;
            ia_cli::simulate(&text, &source)
        }
        Command::Gradient { file, method } => {
            let (text, source) = read_scenario(&file)?;
            let method = match method {
                MethodArg::Forward => GradientMethod::Forward,
                MethodArg::Adjoint => GradientMethod::Adjoint,
            };
            ia_cli::gradient(&text, &source, method)
        }
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version go to standard output and exit 0; usage
            // errors print clap's message and exit 2.
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
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
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}
