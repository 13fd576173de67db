import CLI
import Foundation
import Link
import Pairing

/// `ppc-tool pair HOST:PORT`: pairs this device with a host whose pairing window is open (`ppc-host pair`). Both show
/// the same six-digit code; the person compares them and confirms on both; only then does each pin the other's key.
enum PairCommand {
    static let command = Command(
        "pair", abstract: "Pair this device with a ppc-host (its pairing window open: ppc-host pair): compare the code, confirm.",
        discussion: """
            The device's identity (an X25519 key, created on first use) and the hosts it pinned live in --state DIR
            (default $XDG_STATE_HOME/ppc), 0600. A wrong or unconfirmed code pins nothing.
            """,
        options: [
            .value("device-id", "id", help: "The name this device is paired as (default: the host name, else machine-<machine-id>)."),
            .value("state", "dir", help: "This device's identity and pinned hosts (default $XDG_STATE_HOME/ppc)."),
            .value("timeout", "seconds", help: "How long to wait for the person's answer (default 120)."),
        ],
        arguments: [Argument("host", help: "HOST:PORT of the host's pairing window.")], run: pair)

    static func pair(_ inv: Invocation) throws -> ExitCode {
        let target = inv.argument(0)!
        let parts = target.split(separator: ":")
        guard parts.count == 2, let port = Int(parts[1]), (1...65535).contains(port) else { throw CommandFailure.usage("'\(target)': expected HOST:PORT") }
        let device = try deviceID(inv)
        let timeout = try inv.parsed("timeout", as: Double.self) ?? 120
        guard timeout > 0 else { throw CommandFailure.usage("--timeout must be positive") }
        let dir = StateDirectory.resolve(inv.value("state"), app: "ppc")
        let identity: Identity
        let hosts: PairedPeers
        do {
            let (id, created) = try Identity.loadOrCreate(dir)
            identity = id
            if created { Terminal.out("created this device's identity in \(dir)/identity.key (fingerprint \(id.fingerprint))") }
            hosts = try PairedPeers(directory: dir)
        } catch { throw CommandFailure.dataError("\(error)") }
        let c: Connection
        do { c = try Connection.connect(host: String(parts[0]), port: port, channel: .control, attempts: 6) } catch {
            throw CommandFailure.failure("\(target): \(error)")
        }
        do {
            let result = try PairingProtocol.pairAsDevice(c, identity: identity, deviceID: device) { code, hostName, fingerprint in
                Terminal.out("pairing \(device) with \(hostName) at \(target) (host key \(fingerprint))")
                Terminal.out("code: \(code)")
                return Terminal.ask("Does the host show the same code?", timeoutNs: Int64(timeout * 1e9))
            }
            try hosts.pin(name: target, key: result.peerKey)
            Terminal.out("paired: \(device) ↔ \(result.peerName) at \(target) (host key \(KeyText.fingerprint(result.peerKey))); pinned in \(hosts.path)")
            return .success
        } catch {
            Terminal.err("ppc-tool pair: \(error)")
            return .failure
        }
    }
}
