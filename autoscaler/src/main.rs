//! `cluster-autoscaler`: the library's command line with the built-in cloud providers.

/// mimalloc rather than glibc's malloc: the initial lists of a large cluster are parsed and
/// trimmed in a burst of allocations, which glibc keeps as fragmented resident memory.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    autoscaler::cli::main(autoscaler::compose::builtin_providers())
}
