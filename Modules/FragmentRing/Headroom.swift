import Glibc
import Synchronization
import Syscall

/// Disk space a ring holds in reserve: `DIR/headroom`, a file allocated (not just sized) to ``target`` bytes when the
/// ring opens.
///
/// When another writer fills the disk, the write of a fragment or of its index record that fails with ENOSPC is given
/// room from here and tried again, so capture goes on; after each publish the space recycled fragments freed tops it
/// back up. Only the ring's one writer thread releases or refills it.
final class Headroom: Sendable {
    let path: String
    let target: Int64
    /// What one release gives back at least: a few fragments' worth, so a full disk costs one truncate, not one a write.
    static let step: Int64 = 4 << 20
    private let state = Guarded<(held: Int64, released: Int64, releases: Int)>((0, 0, 0))

    init(directory: String, target: Int64) {
        path = "\(directory)/headroom"
        self.target = max(0, target)
        if self.target == 0 {
            try? FileSystem.removeIfPresent(path)
        } else {
            refill()
        }
    }

    /// Bytes held now, bytes given back so far, and how many times.
    var figures: (held: Int64, released: Int64, releases: Int) { state.withLock { $0 } }

    /// Grows the file back towards `target` with the space the disk has; a full disk leaves it as it is.
    func refill() {
        guard target > 0 else { return }
        state.withLock { s in
            guard s.held < target else { return }
            guard let fd = try? FileDescriptor.open(path, O_RDWR | O_CREAT) else { return }
            // Allocated in steps, so a disk with a little room gives what it has.
            var held = (try? fd.size()) ?? 0
            while held < target {
                let step = min(Self.step, target - held)
                guard (try? fd.reserve(offset: held, count: step)) != nil else { break }
                held += step
            }
            s.held = held
        }
    }

    /// Gives back at least `bytes` (a whole step at least) by shortening the file; returns what was given back (0:
    /// nothing left to give).
    func release(atLeast bytes: Int64, counted: Bool = true) -> Int64 {
        state.withLock { s in
            guard s.held > 0, let fd = try? FileDescriptor.open(path, O_RDWR) else { return 0 }
            let give = min(s.held, max(bytes, Self.step))
            guard (try? fd.truncate(s.held - give)) != nil else { return 0 }
            s.held -= give
            if counted {
                s.released += give
                s.releases += 1
            }
            return give
        }
    }
}
