import CLI
import Config
import Foundation
import Policy
import Session

/// `ppc-tool policy check`: what Policy would say of this machine now, before any session arms — the thermal level and
/// what it would make yield, the output filesystem's free space against the storage floor, the memory budget. The
/// answer a session would give at its start (`SessionLayout.policySettings`, the same monitor, one reading).
enum PolicyCommand {
    static let command = Command(
        "policy",
        abstract:
            "What would yield here now: the thermal level, free space against the storage floor, the memory budget.",
        subcommands: [
            Command(
                "check",
                abstract:
                    "Would a session arm here, and what would yield? Exit 0 when it would arm, 1 when it would refuse (free space below the storage floor).",
                discussion:
                    "One reading, as a session's first: a thermal level that persists is judged over several (policy.thermalHistoryWindow), so a run may pause minting later where this says only transfers would.",
                options: [
                    jsonFlag, ConfigCommand.manifestOption, setOption, measuredOption,
                    .value(
                        "out", "dir",
                        help:
                            "The output directory a session would use (default ./out): its filesystem's free space is what counts."
                    ),
                    .value("thermal-root", "dir", help: "Where thermal zones are read (default /sys/class/thermal)."),
                ],
                run: check)
        ])

    static func check(_ inv: Invocation) throws -> ExitCode {
        let config = try ConfigCommand.configuration(inv)
        let out = inv.value("out") ?? "out"
        let settings = SessionLayout.policySettings(
            config, out: out, thermalRoot: inv.value("thermal-root") ?? "/sys/class/thermal")
        let monitor = PolicyMonitor(settings)
        monitor.sample()
        let reading = monitor.thermal.last
        let refusal = monitor.armRefusal()
        let free = monitor.freeBytes
        func provenance(_ key: String) -> String { config[key].map { $0.provenance.mark.rawValue } ?? "" }
        if inv.flag("json") {
            try printJSON(
                [
                    "out": out, "arms": refusal == nil, "refusal": refusal as Any? ?? NSNull(),
                    "thermal": reading.map { r in
                        [
                            "level": r.level.description, "hottestCelsius": r.hottestCelsius, "zone": r.zone,
                            "basis": r.basis,
                        ] as [String: Any]
                    } as Any? ?? NSNull(),
                    "stance": monitor.stance.description,
                    "freeBytes": free as Any? ?? NSNull(),
                    "storageFloorBytes": [
                        "value": settings.storageFloorBytes, "provenance": provenance("device.storageFloorBytes"),
                    ] as [String: Any],
                    "memoryBudgetBytes": [
                        "value": settings.memoryBudgetBytes, "provenance": provenance("policy.memoryBudgetBytes"),
                    ] as [String: Any],
                ] as [String: Any])
        } else {
            if let r = reading {
                Terminal.out(
                    String(
                        format: "thermal:  %@ — %@ at %.1f °C, against %@", r.level.description, r.zone,
                        r.hottestCelsius, r.basis))
            } else {
                Terminal.out(
                    "thermal:  unavailable — no readable zone under \(settings.sensor.root) (a VM or a container); nothing is claimed"
                )
            }
            Terminal.out("yields:   \(monitor.stance) (capture never yields)")
            Terminal.out(
                "storage:  \(free.map(Format.bytes) ?? "unknown") free for \(out), floor \(Format.bytes(settings.storageFloorBytes)) (device.storageFloorBytes, \(provenance("device.storageFloorBytes")))"
            )
            Terminal.out(
                "memory:   a session's resident memory is held against \(Format.bytes(settings.memoryBudgetBytes)) (policy.memoryBudgetBytes, \(provenance("policy.memoryBudgetBytes"))) while it runs"
            )
            Terminal.out(refusal.map { "arms:     no — \($0)" } ?? "arms:     yes")
        }
        return refusal == nil ? .success : .failure
    }
}
