import Admission
import Catalogue
import Dispatch
import Foundation
import Library
import Link
import Media
import PayloadSource
import PostgresCatalogue
import Studio
import Synchronization
import Syscall
import Transfer
import WebServer

/// A host, composed: the link server that receives clips, the catalogue that indexes them (off the receive path), the
/// viewing copies of Motion JPEG clips, the bays, and the studio when asked for — wired so each clip stored is
/// catalogued, shown and copied, and a shared catalogue that comes back is caught up. ppc-host is its command line.
public final class HostService: @unchecked Sendable {
    // @unchecked: `studio` is set once in init, before `run`; everything else is immutable or behind its own lock.

    /// What the host is told at its start.
    public struct Settings: Sendable {
        public var listen: (host: String, port: Int)
        public var library: String
        public var policy: IngestPolicy
        public var security: HostSecurity
        /// Where the studio is served and who may see it (nil: no studio).
        public var studio: (host: String, port: Int, access: StudioAccess?)?
        /// Fault injection: cut every bulk connection after this many chunks.
        public var stopBulkAfterChunks: Int?

        public init(
            listen: (host: String, port: Int), library: String, policy: IngestPolicy, security: HostSecurity,
            studio: (host: String, port: Int, access: StudioAccess?)? = nil, stopBulkAfterChunks: Int? = nil
        ) {
            self.listen = listen
            self.library = library
            self.policy = policy
            self.security = security
            self.studio = studio
            self.stopBulkAfterChunks = stopBulkAfterChunks
        }
    }

    public let server: HostServer
    public let catalogue: any CatalogueStore
    public let bays: Bays
    /// The library's students and who is hitting at each bay.
    public let roster: Roster
    /// The studio, when one was asked for.
    public private(set) var studio: Studio?
    let settings: Settings
    let views: ViewCopies
    let cataloguing = DispatchQueue(label: "ppc-host.catalogue", qos: .utility)
    /// Clips stored but not catalogued (each named as it happened).
    let notCatalogued = Tally()
    /// Each line the host says (stored, catalogued, refused, …), and each warning.
    let say: @Sendable (String) -> Void
    let warn: @Sendable (String) -> Void

    /// Composes the host. Throws what stops it from starting: the link's address (`LinkError`), the studio's
    /// (`WebServerError`), a library or bays file it cannot use.
    public init(
        _ settings: Settings, catalogue: any CatalogueStore, say: @escaping @Sendable (String) -> Void,
        warn: @escaping @Sendable (String) -> Void
    ) throws {
        self.settings = settings
        self.catalogue = catalogue
        self.say = say
        self.warn = warn
        let library = settings.library
        bays = try Bays(library: library)
        roster = try Roster(library: library)
        views = ViewCopies(log: say)
        // A service is given a soft limit of 1 024 descriptors whatever its hard limit: the host takes what it may,
        // and keeps connections that have not finished a handshake to an eighth of it (at most 128).
        let files = FileLimit.raiseToHard()
        let pendingLimits = PendingConnections.Limits(perPeer: 8, overall: min(128, max(16, files.soft / 8)))
        let box = StudioBox()
        var options = HostServer.Options()
        options.bays = { [bays] in bays.bay(of: $0) }
        options.onLog = say
        // Each received bundle is checked against its own meta.json (a ppc device checks before it sends: a mismatch
        // is another sender's), and its clip measured from its own file (libavformat, demux only) against the policy.
        // A clip's folder is named by its id (as offered): a meta.json naming another clip does not match either.
        options.checkBundle = {
            ClipMeta.bundleProblem($0, besides: HostStore.hostFiles, clipID: ($0 as NSString).lastPathComponent)
        }
        options.measureClip = { path in
            do {
                let f = try ClipProbe.facts(path)
                return .success(
                    ClipMeasurement(
                        width: f.width, height: f.height, framesPerSecond: f.framesPerSecond, codec: f.codec,
                        frames: f.frames))
            } catch { return .failure(HostServer.MeasureError("\(error)")) }
        }
        options.stopBulkAfterChunks = settings.stopBulkAfterChunks
        // What the studio shows at once (nothing while there is no studio).
        options.onLive = { event in
            guard let studio = box.studio else { return }
            switch event {
            case .connected, .disconnected, .status: studio.devicesChanged()
            case .shot(let device, let t0HostNs):
                studio.devicesChanged()
                studio.shot(device: device, t0HostNs: t0HostNs)
            case .preview(let device, let w, let h, let luma):
                studio.preview(device: device, width: w, height: h, luma: luma)
            case .look(let device, let clipID, _, let t0, let zero, let t0Device, let zeroDevice):
                studio.look(
                    device: device, clipID: clipID, t0HostNs: t0, zeroHostNs: zero, t0DeviceNs: t0Device,
                    zeroDeviceNs: zeroDevice)
            }
        }
        let (views, cataloguing, notCatalogued) = (views, cataloguing, self.notCatalogued)
        options.onClipStored = { dir in
            views.enqueue(dir)
            // Indexed off the receive path too: the clip is already durable; the catalogue is its index.
            cataloguing.async {
                do {
                    let (clip, warning) = try LibraryClip.place(dir, in: catalogue)
                    if let warning { warn(warning) }
                    let after =
                        clip.t0HostNs.map {
                            String(format: ", %.0f ms after its t0", Double(monotonicNowNs() - $0) / 1e6)
                        } ?? ""
                    say("catalogued \(clip.clipID) (\(clip.device), swing \(clip.swingID ?? clip.clipID)\(after))")
                    box.studio?.clipCatalogued(clip)
                } catch {
                    notCatalogued.count.add(1, ordering: .relaxed)
                    say("\(dir) not catalogued: \(error) (ppc-host catalogue rebuild re-reads it)")
                }
            }
        }
        server = try HostServer(
            host: settings.listen.host, port: settings.listen.port, library: library, policy: settings.policy,
            security: settings.security, pending: PendingConnections(pendingLimits), options: options)
        watchSharedCatalogue(box)
        if (catalogue as? PostgresCatalogue)?.isAvailable ?? true { catchUp("") }
        if let s = settings.studio {
            let server = server
            let studio = try Studio(
                host: s.host, port: s.port, library: library, catalogue: catalogue, access: s.access, bays: bays,
                roster: roster,
                live: { server.liveDevices.map(StudioLive.device) }, say: warn)
            box.studio = studio
            self.studio = studio
        }
        views.catchUp(library: library)
    }

    /// Clips stored before this start and not in the catalogue — the host stopped before it indexed them, or `make
    /// run`'s file sink wrote them into the library — are catalogued first, studio or not; and again each time a shared
    /// catalogue comes back after it could not be reached (clips stored meanwhile are in the library).
    func catchUp(_ when: String) {
        do {
            let (added, skipped, warnings) = try Library.catchUp(settings.library, in: catalogue)
            for w in warnings { warn(w) }
            for s in skipped { say("not catalogued: \(s) (ppc-host catalogue rebuild re-reads it)") }
            if added > 0 { say("catalogued \(added) clip(s) already in \(settings.library)\(when)") }
        } catch {
            say("\(error)")
        }
    }

    /// A shared (PostgreSQL) catalogue is watched once a second, so it comes back without waiting for a clip or a page
    /// to ask; when it does, what was stored meanwhile is catalogued and the studio told.
    func watchSharedCatalogue(_ box: StudioBox) {
        guard let shared = catalogue as? PostgresCatalogue else { return }
        shared.onReconnect = { [self] in
            say("the catalogue is reachable again (\(shared.url))")
            cataloguing.async { [self] in
                catchUp(" while the catalogue was away")
                box.studio?.catalogueReturned()
            }
        }
        let watch = Thread {
            while true {
                sleepNs(1_000_000_000)
                shared.reconnectIfDown()
            }
        }
        watch.name = "ppc-host.catalogue-watch"
        watch.start()
        if let why = shared.unavailableBecause {
            say(
                "the catalogue cannot be reached now (\(why)); clips are stored in the library and catalogued once it is back (tried again every 1 to 30 s)"
            )
        }
    }

    /// How `run` ended: how, and how many clips were stored but not catalogued.
    public struct End: Sendable {
        public var server: HostServer.RunEnd
        public var notCatalogued: Int
    }

    /// Serves until `stop` (or the listener fails for good); every clip stored is catalogued before it returns.
    public func run() -> End {
        let end = server.run()
        cataloguing.sync {}
        return End(server: end, notCatalogued: notCatalogued.count.load(ordering: .relaxed))
    }

    /// No new connection; a bye to each device linked.
    public func stop(saying reason: String) { server.stop(saying: reason) }
}

/// A count shared with a callback made before the host is whole.
final class Tally: Sendable {
    let count = Atomic<Int>(0)
}

/// The studio, once it is up (the clip-stored callback is made before it).
final class StudioBox: @unchecked Sendable {
    // @unchecked: set once, before the server runs; read after.
    var studio: Studio?
}
