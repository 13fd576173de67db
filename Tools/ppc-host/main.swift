import Admission
import CLI
import Catalogue
import Discovery
import Foundation
import HostService
import Library
import Link
import Media
import Pairing
import PayloadSource
import PostgresCatalogue
import Studio
import Synchronization
import Syscall
import Transfer
import WebServer

let stateOption = Option.value(
    "state", "dir", help: "This host's identity and paired devices (default $XDG_STATE_HOME/ppc-host).")

/// The host's identity and pairings, or a data error naming the file.
func hostState(_ inv: Invocation) throws -> (dir: String, identity: Identity, created: Bool) {
    let dir = StateDirectory.resolve(inv.value("state"), app: "ppc-host")
    do {
        let (identity, created) = try Identity.loadOrCreate(dir)
        return (dir, identity, created)
    } catch { throw CommandFailure.dataError("\(error)") }
}

/// `--listen` as HOST:PORT (port 0: the kernel picks one, and it is printed).
func listenAddress(_ inv: Invocation, default d: String) throws -> (host: String, port: Int) {
    let listen = try inv.endpoint("listen", default: d, ports: 0...65535)!
    return (listen.host, listen.port)
}

let pairCommand = Command(
    "pair",
    abstract: "Open a pairing window: a device runs `ppc-tool pair HOST:PORT`; compare the code, confirm on both.",
    discussion: """
        The window closes by itself after --window seconds, after --attempts failed or declined attempts (one second
        apart at least), or once a device is paired. Nothing is pinned unless both sides confirmed the same code.
        """,
    options: [
        .value("listen", "host:port", help: "Where devices reach the window (default 127.0.0.1:7600)."), stateOption,
        .value("window", "seconds", help: "How long the window stays open (default 120)."),
        .value("attempts", "n", help: "Attempts allowed in the window (default 3)."),
        .value("name", "name", help: "The name devices see for this host (default: the host name)."),
        .value(
            "device", "id",
            help: "Instead of a window: pair with this device, found over DNS-SD (it runs ppc-tool pair --advertise)."),
        .value(
            "serves", "host:port",
            help: "With --device: the address this host serves devices on (the device pins the key under it)."),
    ],
    run: { inv in
        let (host, port) = try listenAddress(inv, default: "127.0.0.1:7600")
        let window = try inv.parsed("window", in: 1.0...3600.0) ?? 120
        let attempts = try inv.parsed("attempts", in: 1...20) ?? 3
        let state = try hostState(inv)
        if state.created {
            Terminal.out(
                "ppc-host: created this host's identity in \(state.dir)/identity.key (fingerprint \(state.identity.fingerprint))"
            )
        }
        let peers: PairedPeers
        do { peers = try PairedPeers(directory: state.dir) } catch { throw CommandFailure.dataError("\(error)") }
        let name = inv.value("name") ?? ProcessInfo.processInfo.hostName
        @Sendable func admit(_ id: String, _ key: [UInt8]) -> String? {
            PlainName.problem(id, what: "device id") ?? peers.conflict(name: id, key: key)
        }
        if let wanted = inv.value("device") {
            // The device advertised itself; the host connects to it and the pairing runs as from a window.
            guard let serves = try inv.endpoint("serves")?.description else {
                throw CommandFailure.usage(
                    "--device needs --serves HOST:PORT: where this host serves devices (the device pins the key under it)"
                )
            }
            let found: [Discovery.Service]
            // Until it is seen, or 10 s: a network or an avahi-daemon under load answers later than the 3 s a list waits.
            do { found = try Discovery.browse(seconds: 10) { $0.contains { $0.deviceID == wanted } } } catch {
                throw CommandFailure.failure("\(error)")
            }
            guard let service = found.first(where: { $0.deviceID == wanted }) else {
                throw CommandFailure.failure(
                    "no device '\(wanted)' advertising on the network (seen: \(found.compactMap(\.deviceID).joined(separator: ", ")))"
                )
            }
            let c: Connection
            do {
                c = try Connection.connect(host: service.address, port: service.port, channel: .control, attempts: 3)
            } catch {
                throw CommandFailure.failure("\(wanted) at \(service.address):\(service.port): \(error)")
            }
            let pairing = PairingWindow(
                listener: nil, identity: state.identity,
                settings: .init(windowNs: Int64(window * 1e9), attempts: 1, hostName: name, serves: serves),
                admit: { id, key in
                    id == wanted
                        ? admit(id, key)
                        : "this host asked to pair with '\(wanted)', and this device says it is '\(id)'"
                },
                ask: ask, say: { Terminal.out("ppc-host: \($0)") })
            return try pinned(pairing.pair(over: c), peers: peers, failure: "pairing with \(wanted) failed")
        }
        let listener: Listener
        do { listener = try Listener(host: host, port: port) } catch { throw CommandFailure.failure("\(error)") }
        Terminal.out(
            "ppc-host: pairing window open on \(host):\(listener.port) for \(Int(window)) s (\(attempts) attempts); host key \(state.identity.fingerprint)"
        )
        // Each device's exchange runs on its own thread; only one that reached a code is an attempt, and the person
        // sees one code at a time with who asks for it.
        let pairing = PairingWindow(
            listener: listener, identity: state.identity,
            settings: .init(windowNs: Int64(window * 1e9), attempts: attempts, hostName: name),
            admit: { id, key in admit(id, key) }, ask: ask, say: { Terminal.out("ppc-host: \($0)") })
        return try pinned(pairing.run(), peers: peers, failure: "pairing window closed")
    })

/// What the person at the host is asked, once who asks was said: the code, and yes or no before the deadline.
@Sendable func ask(code: String, id: String, address: String, fingerprint: String, deadline: Int64) -> Bool {
    Terminal.out("code: \(code)")
    return Terminal.ask("Does the device show the same code?", timeoutNs: max(0, deadline - monotonicNowNs()))
}

/// A pairing's end, whichever way it began: the device pinned and said, or nothing pinned and why.
func pinned(_ outcome: PairingWindow.Outcome, peers: PairedPeers, failure: String) throws -> ExitCode {
    switch outcome {
    case .paired(let result, let address):
        do { try peers.pin(name: result.peerName, key: result.peerKey) } catch {
            throw CommandFailure.failure("\(error)")
        }
        Terminal.out(
            "ppc-host: paired '\(result.peerName)' at \(address) (device key \(KeyText.fingerprint(result.peerKey))); pinned in \(peers.path)"
        )
        return .success
    case .closed(let tried):
        Terminal.err("ppc-host: \(failure) (\(tried) code(s) shown); nothing pinned")
        return .failure
    }
}

let discoverCommand = Command(
    "discover", abstract: "The ppc devices advertising themselves on the local network (DNS-SD, _ppc._tcp).",
    options: [.flag("json", help: "As JSON."), .value("seconds", "s", help: "How long to listen (default 3).")],
    run: { inv in
        let seconds = try inv.parsed("seconds", in: 0.1...600.0) ?? 3
        let found: [Discovery.Service]
        do { found = try Discovery.browse(seconds: seconds) } catch { throw CommandFailure.failure("\(error)") }
        if inv.flag("json") {
            try Terminal.json(
                found.map {
                    [
                        "name": $0.name, "deviceId": $0.deviceID ?? NSNull(), "host": $0.hostName,
                        "address": $0.address, "port": $0.port,
                        "protocol": $0.txt["proto"] ?? NSNull(),
                    ] as [String: Any]
                })
        } else {
            if found.isEmpty { Terminal.out("no ppc devices seen in \(seconds) s") }
            for s in found {
                // Everything here came from the network: shown, never obeyed (one line stays one line), and a name that
                // could not be paired is said to be one rather than offered as a command to copy.
                func shown(_ t: String) -> String { StandardStream.visible(t, newlines: true) }
                let id = s.deviceID ?? s.name
                let how =
                    PlainName.problem(id, what: "device id").map { "cannot be paired: \(shown($0))" }
                    ?? "pair: ppc-host pair --device \(id) --serves HOST:PORT"
                Terminal.out(
                    "\(shown(id))  \(shown(s.address)):\(s.port)  (\(shown(s.hostName)), protocol \(shown(s.txt["proto"] ?? "?"))) — \(how)"
                )
            }
        }
        return .success
    })

let devicesCommand = Command(
    "devices", abstract: "The devices paired with this host: id, key fingerprint, when.",
    options: [stateOption, .flag("json", help: "As JSON.")],
    run: { inv in
        let state = try hostState(inv)
        let list: [PairedPeers.Peer]
        do { list = try PairedPeers(directory: state.dir).all } catch { throw CommandFailure.dataError("\(error)") }
        if inv.flag("json") {
            try Terminal.json(
                list.map {
                    [
                        "deviceId": $0.name, "fingerprint": $0.fingerprint, "publicKey": $0.publicKey,
                        "pairedAt": $0.pairedAt,
                    ]
                })
        } else {
            if list.isEmpty { Terminal.out("no devices paired (state \(state.dir))") }
            for p in list { Terminal.out("\(p.name)  \(p.fingerprint)  paired \(p.pairedAt)") }
        }
        return .success
    })

let unpairCommand = Command(
    "unpair", abstract: "Forget a paired device: its next connection is refused at the handshake.",
    options: [stateOption],
    arguments: [Argument("device", help: "The device id.")],
    run: { inv in
        let state = try hostState(inv)
        let id = inv.argument(0)!
        do {
            guard try PairedPeers(directory: state.dir).unpin(id) else {
                Terminal.err("ppc-host: '\(id)' is not paired with this host")
                return .failure
            }
        } catch { throw CommandFailure.dataError("\(error)") }
        Terminal.out("ppc-host: unpaired '\(id)'")
        return .success
    })

let bayCommand = Command(
    "bay",
    abstract:
        "Set which devices stand at a bay, in the order their angles are shown: ppc-host bay bay-1 face-on down-the-line.",
    discussion: """
        A shot one device of a bay hears is relayed by the host to the others, so a camera with no microphone records
        every swing its bay hears; a swing's pages show the bay's angles in this order. No devices: the bay is removed.
        Kept in LIBRARY/bays.json (the studio sets it too); a running ppc-host reads it when it starts.
        """,
    options: [HostCatalogue.libraryOption],
    arguments: [
        Argument("name", help: "The bay (a plain name)."),
        Argument("devices", optional: true, repeating: true, help: "Its devices, in order."),
    ],
    run: { inv in
        let library = inv.value("library") ?? "library"
        let bays: Bays
        do { bays = try Bays(library: library) } catch { throw CommandFailure.dataError("\(error)") }
        let name = inv.argument(0)!
        let devices = Array(inv.arguments.dropFirst())
        var plan = bays.plan
        plan.bays.removeAll { $0.name == name }
        // a device stands at one bay
        for i in plan.bays.indices { plan.bays[i].devices.removeAll { devices.contains($0) } }
        if !devices.isEmpty { plan.bays.append(.init(name: name, devices: devices)) }
        do { try bays.set(plan) } catch let e as LibraryError { throw CommandFailure.usage(e.description) } catch {
            throw CommandFailure.failure("\(error)")
        }
        Terminal.out(
            devices.isEmpty
                ? "ppc-host: bay \(name) removed (\(bays.path))"
                : "ppc-host: bay \(name): \(devices.joined(separator: ", ")) (\(bays.path))")
        for b in plan.bays where b.name != name {
            Terminal.out("  bay \(b.name): \(b.devices.joined(separator: ", "))")
        }
        return .success
    })

/// The host part of a studio link for `--http ADDRESS:PORT`: the address, or this machine's name for a wildcard one
/// (0.0.0.0 is no address a tablet can open).
func studioHostShown(_ http: Endpoint) -> String {
    let shown = http.host
    return shown.isEmpty || shown == "0.0.0.0" || shown == "::" || shown == "[::]"
        ? ProcessInfo.processInfo.hostName : shown
}

let studioLinkCommand = Command(
    "studio-link", abstract: "The link that opens the studio served with --studio-on-network: to give a coach again.",
    discussion:
        "It holds the studio's key (STATE/studio.key, made here if there is none). --new makes another: every link given out stops working once ppc-host starts again.",
    options: [
        stateOption,
        .value("http", "host:port", help: "Where the studio is served, as given to ppc-host --http (required)."),
        .flag("new", help: "Make a new key first (the old links stop working at ppc-host's next start)."),
    ],
    run: { inv in
        guard let http = try inv.endpoint("http") else {
            throw CommandFailure.usage("--http: where the studio is served (HOST:PORT, as given to ppc-host --http)")
        }
        let port = http.port
        let dir = StateDirectory.resolve(inv.value("state"), app: "ppc-host")
        if inv.flag("new") { try? FileManager.default.removeItem(atPath: dir + "/studio.key") }
        let made: (key: String, path: String, created: Bool)
        do { made = try AccessKey.loadOrCreate(dir) } catch { throw CommandFailure.dataError("\(error)") }
        Terminal.out("http://\(studioHostShown(http)):\(port)/?key=\(made.key)")
        if made.created {
            Terminal.err(
                "ppc-host: made the studio's key in \(made.path)\(inv.flag("new") ? "; a ppc-host running now still takes the old one until it starts again" : "")"
            )
        }
        return .success
    })

/// `ppc-host`: receives events and clips from many devices; keeps each device's clock relation.
let root = Command(
    "ppc-host", abstract: "Receive clips from ppc devices: many at once, resumable, verified, exactly once.",
    discussion: """
        Only paired devices connect (ppc-host pair, then ppc-tool pair on the device), each over an encrypted,
        authenticated link; a device's id is the one it was paired as.
        Clips land in LIBRARY/<device>/<clipId>/, byte-identical to the device's, with host-meta.json (host-clock times).
        A Motion JPEG clip (a camera's MJPEG passed through) also gets view.mp4, an H.264 copy a browser plays, made
        off the receive path; the original is kept as sent. Copies a stop interrupted are made at the next start.
        SIGTERM or Ctrl-C stops it gracefully: no new connection, a bye to each device linked, the clips stored
        catalogued, exit 0; a second one stops it at once. A clip stored but not catalogued is catalogued at the next start.
        """,
    options: [
        .value(
            "listen", "host:port", help: "Where to listen (default 127.0.0.1:7600; port 0 picks one and prints it)."),
        .value("library", "dir", help: "Where clips are stored (default ./library)."),
        .value("ingest-policy", "name", help: "pinpoint-studio (≥1080 lines, ≥120 fps; default) or any."),
        stateOption, HostCatalogue.catalogueOption,
        .flag(
            "insecure-loopback-only",
            help: "Also take plaintext links, for benches and tests; refused unless listening on a loopback address."),
        .value(
            "cut-bulk-after-chunks", "n",
            help: "Fault injection: cut every bulk connection after n chunks, as a crash would (tests resumption)."),
        .value(
            "http", "host:port",
            help:
                "Serve ppc Studio (the web pages and JSON API, docs/studio.md) there, e.g. 127.0.0.1:8080; port 0 picks one."
        ),
        .flag(
            "studio-on-network",
            help:
                "Let --http take an address other than loopback. The studio then asks for its key: the link printed at start (http://…/?key=…) holds it; STATE/studio.key keeps it."
        ),
    ],
    subcommands: [
        pairCommand, discoverCommand, devicesCommand, unpairCommand, studioLinkCommand, bayCommand,
        HostCatalogue.command, HostCatalogue.clips, Retention.command, Corpus.command,
    ],
    run: { inv in
        let (host, port) = try listenAddress(inv, default: "127.0.0.1:7600")
        let policyName = inv.value("ingest-policy") ?? "pinpoint-studio"
        guard let policy = IngestPolicy.named(policyName) else {
            throw CommandFailure.usage("--ingest-policy '\(policyName)': known policies are pinpoint-studio, any")
        }
        let plaintext = inv.flag("insecure-loopback-only")
        if plaintext, !DeviceLinkSecurity.isLoopback(host) {
            throw CommandFailure.usage(
                "--insecure-loopback-only: \(host) is not a loopback address; plaintext never crosses a network")
        }
        let state = try hostState(inv)
        if state.created {
            Terminal.out(
                "ppc-host: created this host's identity in \(state.dir)/identity.key (fingerprint \(state.identity.fingerprint))"
            )
        }
        let stateDir = state.dir
        // Read at every handshake, so a pairing made or undone meanwhile (ppc-host pair / unpair) counts at once.
        let security = HostSecurity(
            identity: state.identity.keys,
            deviceFor: { key in (try? PairedPeers(directory: stateDir))?.name(for: key) }, allowPlaintext: plaintext)
        let library = inv.value("library") ?? "library"
        do { try FileSystem.makeDirectories(library) } catch {
            throw CommandFailure.failure("--library \(library): cannot make the library there: \(error)")
        }
        let catalogue = try HostCatalogue.open(library: library, url: inv.value("catalogue"), waitForServer: true)
        var settings = HostService.Settings(
            listen: (host, port), library: library, policy: policy, security: security,
            stopBulkAfterChunks: try inv.parsed("cut-bulk-after-chunks", in: 1...Int(Int32.max)))
        if let n = settings.stopBulkAfterChunks {
            Terminal.out("ppc-host: fault injection: bulk connections are cut after \(n) chunks")
        }
        let http = try inv.endpoint("http", ports: 0...65535)
        // Served to the network, the studio asks for its key (kept in the state directory: a link given out goes on
        // working across restarts until the file is removed).
        var access: (gate: StudioAccess, key: String, path: String)?
        if let http {
            if !DeviceLinkSecurity.isLoopback(http.host), !inv.flag("studio-on-network") {
                throw CommandFailure.usage(
                    "--http \(http): not a loopback address; add --studio-on-network to serve the studio there behind its key (anyone given the link printed at start sees every clip and can flag them)"
                )
            }
            if inv.flag("studio-on-network") {
                let made: (key: String, path: String, created: Bool)
                do { made = try AccessKey.loadOrCreate(stateDir) } catch { throw CommandFailure.dataError("\(error)") }
                guard let gate = StudioAccess(key: made.key) else {
                    throw CommandFailure.dataError("\(made.path): the key is too short")
                }
                if made.created { Terminal.out("ppc-host: made the studio's key in \(made.path)") }
                access = (gate, made.key, made.path)
            }
            settings.studio = (http.host, http.port, access?.gate)
        }
        let service: HostService
        do {
            service = try HostService(
                settings, catalogue: catalogue, say: { Terminal.out("ppc-host: \($0)") },
                warn: { Terminal.err("ppc-host: \($0)") })
        } catch let e as WebServerError {
            switch e {
            case .notAnAddress, .cannotListen: throw CommandFailure.usage("--http \(e)")
            case .serverDidNotStart, .pagesMissing: throw CommandFailure.failure("ppc-host: the studio: \(e)")
            }
        } catch let e as LibraryError {
            throw CommandFailure.dataError("\(e)")
        } catch { throw CommandFailure.failure("\(error)") }
        if let http, let studio = service.studio {
            let shown = studioHostShown(http)
            if let access {
                Terminal.out(
                    "ppc-host: studio at http://\(shown):\(studio.port)/?key=\(access.key) (library \(library)); anyone given this link sees every clip and can flag them — the key is kept in \(access.path): remove it and restart to make a new one"
                )
            } else {
                Terminal.out("ppc-host: studio at http://\(shown):\(studio.port)/ (library \(library))")
            }
        }
        Terminal.out(
            "ppc-host: listening on \(host):\(service.server.port), policy \(policy.name), library \(library), host key \(state.identity.fingerprint)\(plaintext ? "; plaintext loopback links taken too (--insecure-loopback-only)" : "")"
        )
        // Ctrl-C or a supervisor's SIGTERM: no new connection is taken, each device linked is told bye, the clips already
        // stored are catalogued, and the host ends with status 0. A device keeps what it owes for the host's next start;
        // a transfer cut here resumes from its last acknowledged chunk. A second signal ends the host at once.
        let stops = try Signals.watchStopRequests { signal, count in
            if count == 1 {
                Terminal.out(
                    "ppc-host: \(signal): stopping: no new connections, bye to the devices linked; the clips stored are catalogued first (again to stop at once)"
                )
                service.stop(saying: "ppc-host stopping (\(signal))")
            } else {
                Terminal.out("ppc-host: \(signal) again: stopping at once")
                Signals.exitNow(130)
            }
        }
        defer { stops.cancel() }
        let end = service.run()
        Terminal.out(
            end.notCatalogued == 0
                ? "ppc-host: stopped; every clip stored is catalogued (a view copy not made yet is made at the next start)"
                : "ppc-host: stopped; \(end.notCatalogued) clip(s) stored but not catalogued (named above; ppc-host catalogue rebuild re-reads them)"
        )
        // Only a stop asked for (a signal) is a success: a host that stopped by itself must be restarted by its
        // supervisor (Restart=on-failure), and a listener that failed for good is such a stop.
        if case .failed(let e) = end.server {
            Terminal.err("ppc-host: stopped without being asked: \(e)")
            return .failure
        }
        return .success
    })

MediaLog.quiet()
Signals.unblockAll()
exit(Main.run(root, version: "ppc-host 0.1.0", arguments: Array(CommandLine.arguments.dropFirst())))
