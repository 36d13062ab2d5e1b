//! The autoscaler with the private IaaS provider: our `cluster-autoscaler` (controller, `plan`,
//! `simulate`, every upstream flag) plus `--cloud-provider=private-iaas`. This is all the code a
//! platform team's binary needs; the provider lives in its own library.

fn main() -> std::process::ExitCode {
    // The providers this repository ships (`static`, `memory`, …)…
    let mut providers = autoscaler::compose::builtin_providers();
    // …plus ours, under the name `--cloud-provider` chooses it by.
    providers.register(private_iaas::PROVIDER_NAME, private_iaas::build);
    // Parses the flags and runs the controller, `plan` or `simulate`; returns the exit code.
    autoscaler::cli::main(providers)
}
