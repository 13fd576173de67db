import Benchmarks
import CLI
import Foundation
import Media
import Syscall

/// `ppc-tool`: a subcommand per module, plus `run`.
let root = Command(
    "ppc-tool",
    abstract: "PinPoint Capture for Linux: capture, ring, detect, mint and ship golf-swing clips.",
    discussion: "Exit codes: 0 ok, 64 usage error, 65 bad input data, 1 runtime failure.",
    subcommands: [
        ConfigCommand.command, ManifestCommand.command, PluginsCommand.command, RingCommand.command,
        IndexCommand.command,
        PayloadCommand.command, DetectCommand.command, LinkCommand.command, TransferCommand.command,
        PolicyCommand.command,
        CaptureCommand.command, SelftestCommand.command, BenchCommand.command, MeasureCommand.command,
        PairCommand.command, RunCommand.command,
    ])

Signals.unblockAll()
MemoryPolicy.keepFreedMemory()
MediaLog.quiet()
BuiltinPlugins.registerAll()
exit(Main.run(root, version: "ppc-tool \(ppcVersion)", arguments: Array(CommandLine.arguments.dropFirst())))
