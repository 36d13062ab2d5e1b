//! `cluster-autoscaler`: the library's command line with the built-in cloud providers.

fn main() -> std::process::ExitCode {
    autoscaler::cli::main(autoscaler::compose::builtin_providers())
}
