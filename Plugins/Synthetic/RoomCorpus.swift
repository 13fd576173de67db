import Foundation

/// A second, independent labelled corpus for the impact detector, so that tuning cannot overfit one generator.
///
/// It shares nothing with `ImpactCorpus` but the `Session` shape: its own random numbers (xoshiro256**, Box–Muller),
/// its own room (a shoebox: image sources to the fourth order for the early reflections, a feedback delay network with
/// frequency-dependent loss for the late tail, levels from Sabine's RT60 and the critical distance), its own impact
/// models (a contact crack and the head's modes: driver, iron, mishit) and its own distractor library (low-frequency
/// thuds that may clip the microphone, club taps on the mat, ball drops, claps, voices, music through a speaker and an
/// impact in the neighbouring bay: through a partition, quieter, later, more reverberant). 60 s sessions at 48 kHz.
///
/// Splits: `tuning` seeds are the ones a detector change may be tried on; `heldOut` seeds are for the figures only and
/// were never looked at while tuning (see Detect's README for the record of what was measured when).
///
/// Truth: an impact's onset is the sample at which its direct sound reaches the microphone (the crack's first sample,
/// non-zero there); time of flight is the detector's business, not the corpus's.
public enum RoomCorpus {
    public enum Kind: String, Sendable, CaseIterable {
        /// An absorbent bay (RT60 0.12–0.35 s), impacts −40…−6 dBFS, thuds, taps, ball drops and quiet voices.
        case clean
        /// A reverberant room (RT60 0.6–1.6 s), impacts down to −45 dBFS, every distractor, hum and fan noise.
        case hard
    }

    public enum Split: String, Sendable, CaseIterable {
        case tuning
        case heldOut = "held-out"

        /// The seeds of this split: tuning 1…, held-out 700 001…
        public func seeds(_ count: Int) -> [UInt64] {
            let first: UInt64 = self == .tuning ? 1 : 700_001
            return (0..<UInt64(max(0, count))).map { first + $0 }
        }
    }

    /// The distractor kinds, as named in a session's events.
    public static let distractorKinds = ["thud", "club tap", "ball drop", "clap", "voice", "music", "neighbour impact"]

    /// One session, reproducible from `kind` and `seed`.
    public static func session(_ kind: Kind, seed: UInt64, seconds: Double = 60, sampleRate: Int = 48_000)
        -> ImpactCorpus.Session
    {
        var g = Xoshiro(seed: seed ^ (kind == .hard ? 0x6A09_E667_F3BC_C908 : 0xBB67_AE85_84CA_A73B))
        let fs = Double(sampleRate)
        let n = Int(seconds * fs)
        let room = Room(kind, g: &g)
        var scene = Scene(count: n, fs: fs, room: room)
        let floorDb = noiseFloor(&scene.out, kind: kind, fs: fs, g: &g)

        var events: [ImpactCorpus.Event] = []
        var impacts: [Int64] = []
        // Our impacts: 1.8–4.5 s apart, 1 s from the ends. Positions: the ball on the mat, the microphone 1–3 m off.
        var t = g.range(1.0, 2.5)
        var impactStarts: [Int] = []
        while t < seconds - 1.0 {
            let start = Int(t * fs)
            let model: ImpactModel =
                g.unit() < (kind == .hard ? 0.2 : 0.1) ? .mishit : (g.unit() < 0.5 ? .driver : .iron)
            let level = max(kind == .clean ? g.range(-40, -6) : g.range(-45, -6), floorDb + 15)
            let dry = impact(model, fs: fs, g: &g)
            let arrival = scene.place(
                dry, emittedAt: start, from: room.ball, levelDbfs: level - (model == .mishit ? g.range(4, 12) : 0))
            impacts.append(Int64(arrival))
            impactStarts.append(arrival)
            events.append(.init(kind: "impact (\(model.rawValue))", sample: Int64(arrival), levelDbfs: level))
            t += g.range(1.8, 4.5)
        }
        // Distractors: none begins from 0.35 s before an impact to 0.08 s after it; music may play over impacts, voices not.
        let kinds: [(String, Double)] =
            kind == .clean
            ? [("thud", 3), ("club tap", 2), ("ball drop", 2), ("voice", 1)]
            : [
                ("thud", 2), ("club tap", 1.5), ("ball drop", 1.5), ("clap", 2), ("voice", 2), ("music", 1),
                ("neighbour impact", 2),
            ]
        let total = kinds.reduce(0) { $0 + $1.1 }
        let count = Int(seconds / (kind == .clean ? 3.5 : 2.0))
        for _ in 0..<count {
            let at = Int(g.range(0.3, seconds - 0.6) * fs)
            if impactStarts.contains(where: { at > $0 - Int(0.35 * fs) && at < $0 + Int(0.08 * fs) }) { continue }
            var pick = g.unit() * total
            var which = kinds[0].0
            for (name, weight) in kinds {
                if pick < weight {
                    which = name
                    break
                }
                pick -= weight
            }
            let level: Double
            let arrival: Int
            switch which {
            case "thud":
                level = g.range(-24, 0)
                arrival = scene.place(thud(fs: fs, g: &g), emittedAt: at, from: room.somewhere(&g), levelDbfs: level)
            case "club tap":
                level = g.range(-42, -18)
                arrival = scene.place(clubTaps(fs: fs, g: &g), emittedAt: at, from: room.nearBall(&g), levelDbfs: level)
            case "ball drop":
                level = g.range(-40, -16)
                arrival = scene.place(ballDrop(fs: fs, g: &g), emittedAt: at, from: room.nearBall(&g), levelDbfs: level)
            case "clap":
                level = g.range(-34, -8)
                arrival = scene.place(claps(fs: fs, g: &g), emittedAt: at, from: room.somewhere(&g), levelDbfs: level)
            case "voice":
                // People at a bay keep quiet through a swing: a voice ends 0.35 s before an impact or starts after it.
                level = kind == .clean ? g.range(-45, -28) : g.range(-40, -16)
                let speech = voice(fs: fs, g: &g)
                let end = at + speech.count
                if impactStarts.contains(where: { end > $0 - Int(0.35 * fs) && at < $0 + Int(0.08 * fs) }) { continue }
                arrival = scene.place(
                    speech, emittedAt: at, from: room.somewhere(&g), levelDbfs: level, sustained: true)
            case "music":
                // Music may play through a swing, but an impact under it is labelled only if an annotator could hear
                // it: music over an impact is at least 10 dB under that impact.
                let song = music(fs: fs, g: &g)
                let under = impacts.indices.filter { Int(impacts[$0]) > at && Int(impacts[$0]) < at + song.count }.map {
                    events[$0].levelDbfs
                }
                level = min(g.range(-42, -24), (under.min() ?? 0) - 10 - g.range(0, 6))
                arrival = scene.place(song, emittedAt: at, from: room.speaker, levelDbfs: level, sustained: true)
            default:
                // The neighbouring bay: an impact behind a partition (mass law: a low-pass), its direct sound 20–32 dB
                // below ours, the room's reverberation carrying it at full strength.
                let model: ImpactModel = g.unit() < 0.5 ? .driver : .iron
                var dry = impact(model, fs: fs, g: &g)
                lowPass(&dry, at: g.range(700, 1600), fs: fs, poles: 2)
                level = g.range(-32, -20) + g.range(-12, 0)
                arrival = scene.place(
                    dry, emittedAt: at, from: room.neighbour, levelDbfs: level, reverbBoostDb: g.range(14, 22))
            }
            events.append(.init(kind: which, sample: Int64(arrival), levelDbfs: level))
        }
        scene.finish()
        // The microphone and its converter: a 20 Hz high-pass, then hard clipping at full scale.
        var x = scene.out
        highPass20(&x, fs: fs)
        for i in 0..<n { x[i] = max(-1, min(1, x[i])) }
        events.sort { $0.sample < $1.sample }
        return .init(
            name: "\(kind.rawValue)-\(seed)", sampleRate: sampleRate, samples: x, impacts: impacts, events: events)
    }

    // MARK: The room

    struct Point { var x, y, z: Double }

    /// A shoebox room: dimensions, one absorption coefficient for the image sources, RT60 (Sabine) for the tail.
    struct Room {
        var size: Point
        var reflection: Double
        var rt60: Double
        /// High frequencies die this much faster in the tail (0: not at all).
        var damping: Double
        var mic: Point
        var ball: Point
        var speaker: Point
        var neighbour: Point

        init(_ kind: Kind, g: inout Xoshiro) {
            size = Point(x: g.range(5, 12), y: g.range(4, 9), z: g.range(2.7, 4.5))
            let rt = kind == .clean ? g.range(0.12, 0.35) : g.range(0.6, 1.6)
            let volume = size.x * size.y * size.z
            let surface = 2 * (size.x * size.y + size.x * size.z + size.y * size.z)
            let alpha = min(0.95, 0.161 * volume / (surface * rt))
            reflection = (1 - alpha).squareRoot()
            rt60 = rt
            damping = kind == .clean ? g.range(0.1, 0.3) : g.range(0.2, 0.5)
            ball = Point(x: size.x * g.range(0.3, 0.5), y: size.y * g.range(0.3, 0.7), z: 0.03)
            let d = g.range(1.0, 3.0)
            let a = g.range(0, 2 * Double.pi)
            mic = Point(
                x: min(size.x - 0.2, max(0.2, ball.x + d * cos(a))),
                y: min(size.y - 0.2, max(0.2, ball.y + d * sin(a))), z: g.range(0.3, 1.6))
            speaker = Point(x: size.x - 0.3, y: size.y * g.range(0.1, 0.9), z: g.range(1.5, 2.5))
            neighbour = Point(x: size.x - 0.1, y: size.y * g.range(0.2, 0.8), z: 0.03)
        }

        func nearBall(_ g: inout Xoshiro) -> Point {
            Point(x: ball.x + g.range(-0.6, 0.6), y: ball.y + g.range(-0.6, 0.6), z: 0.02)
        }

        func somewhere(_ g: inout Xoshiro) -> Point {
            Point(x: size.x * g.range(0.1, 0.9), y: size.y * g.range(0.1, 0.9), z: g.range(0.05, 1.7))
        }

        /// Image sources of `source` up to `maxOrder` reflections (Allen & Berkley): (delay s, gain at 1 m = 1).
        func images(of s: Point, maxOrder: Int) -> [(delay: Double, gain: Double)] {
            var out: [(Double, Double)] = []
            let c = 343.0
            let m = maxOrder
            for mx in -m...m {
                for px in 0...1 {
                    let ox = abs(mx - px) + abs(mx)
                    guard ox <= maxOrder else { continue }
                    let ix = Double(1 - 2 * px) * s.x + 2 * Double(mx) * size.x
                    for my in -m...m {
                        for py in 0...1 {
                            let oy = abs(my - py) + abs(my)
                            guard ox + oy <= maxOrder else { continue }
                            let iy = Double(1 - 2 * py) * s.y + 2 * Double(my) * size.y
                            for mz in -m...m {
                                for pz in 0...1 {
                                    let oz = abs(mz - pz) + abs(mz)
                                    guard ox + oy + oz <= maxOrder else { continue }
                                    let iz = Double(1 - 2 * pz) * s.z + 2 * Double(mz) * size.z
                                    let dx = ix - mic.x
                                    let dy = iy - mic.y
                                    let dz = iz - mic.z
                                    let r = max(0.05, (dx * dx + dy * dy + dz * dz).squareRoot())
                                    out.append((r / c, pow(reflection, Double(ox + oy + oz)) / r))
                                }
                            }
                        }
                    }
                }
            }
            return out
        }

        /// The reverberant field's pressure gain relative to the direct sound at 1 m: 1 / critical distance.
        var diffuseGain: Double {
            let volume = size.x * size.y * size.z
            return 1 / (0.057 * (volume / rt60).squareRoot())
        }
    }

    /// The session being built: the output, and the send into the late reverberation.
    struct Scene {
        var out: [Float]
        var send: [Float]
        let fs: Double
        let room: Room

        init(count: Int, fs: Double, room: Room) {
            out = [Float](repeating: 0, count: count)
            send = [Float](repeating: 0, count: count)
            self.fs = fs
            self.room = room
        }

        /// Adds `dry` (peak 1) emitted at sample `start` from `p`, scaled so its direct sound peaks at `levelDbfs` at the
        /// microphone; early reflections from the image sources; the late tail's send. Returns the direct arrival sample.
        /// A `sustained` sound's level is what a meter at the microphone reads, room included (its direct part is lower
        /// by the direct-to-reverberant ratio); a transient's is its direct sound's peak.
        mutating func place(
            _ dry: [Float], emittedAt start: Int, from p: Point, levelDbfs: Double, reverbBoostDb: Double = 0,
            sustained: Bool = false
        ) -> Int {
            let images = room.images(of: p, maxOrder: 4)
            let direct = images.min { $0.delay < $1.delay }!
            let reverberant = sustained ? 10 * log10(1 + pow(room.diffuseGain / direct.gain, 2)) : 0
            let scale = pow(10, (levelDbfs - reverberant) / 20) / direct.gain
            let arrival = start + Int((direct.delay * fs).rounded())
            let boost = pow(10, reverbBoostDb / 20)
            let count = out.count
            out.withUnsafeMutableBufferPointer { o in
                dry.withUnsafeBufferPointer { d in
                    for image in images {
                        let isDirect = image.delay == direct.delay
                        let at = start + Int((image.delay * fs).rounded())
                        let gain = Float(scale * image.gain * (isDirect ? 1 : boost))
                        guard at < count else { continue }
                        let length = min(d.count, count - at)
                        for k in 0..<length { o[at + k] += gain * d[k] }
                    }
                }
            }
            let sendGain = Float(scale * room.diffuseGain * boost)
            send.withUnsafeMutableBufferPointer { s in
                for k in 0..<min(dry.count, count - arrival) where arrival + k >= 0 {
                    s[arrival + k] += sendGain * dry[k]
                }
            }
            return arrival
        }

        /// Runs the late reverberation: an 8-line feedback delay network (Hadamard feedback, a one-pole low-pass in
        /// each loop), its energy set to the diffuse field's beyond its first delay.
        mutating func finish() {
            let lengthsMs = [29.7, 37.1, 41.1, 43.7, 53.0, 59.3, 67.1, 71.9]
            let lengths = lengthsMs.map { Int($0 * fs / 1000) }
            let loss = lengths.map { Float(pow(10, -3 * Double($0) / (fs * room.rt60))) }
            let damping = Float(room.damping)
            // The eight lines in one buffer, each at its offset; nothing is allocated per sample.
            let offsets = lengths.reduce(into: [0]) { $0.append($0.last! + $1) }
            let store = UnsafeMutablePointer<Float>.allocate(capacity: offsets[8])
            defer { store.deallocate() }
            func run(_ input: UnsafeBufferPointer<Float>, _ output: UnsafeMutableBufferPointer<Float>, gain: Float) {
                store.initialize(repeating: 0, count: offsets[8])
                var heads = (0, 0, 0, 0, 0, 0, 0, 0)
                var v = (Float(0), Float(0), Float(0), Float(0), Float(0), Float(0), Float(0), Float(0))
                var lp = v
                let l = (lengths[0], lengths[1], lengths[2], lengths[3], lengths[4], lengths[5], lengths[6], lengths[7])
                let o = (offsets[0], offsets[1], offsets[2], offsets[3], offsets[4], offsets[5], offsets[6], offsets[7])
                let g = (loss[0], loss[1], loss[2], loss[3], loss[4], loss[5], loss[6], loss[7])
                let c = 1 - damping
                @inline(__always) func tap(_ lpj: inout Float, _ offset: Int, _ head: Int, _ gj: Float) -> Float {
                    lpj += c * (store[offset + head] - lpj)
                    return lpj * gj
                }
                @inline(__always) func advance(_ head: inout Int, _ length: Int) {
                    head = head + 1 == length ? 0 : head + 1
                }
                for i in 0..<input.count {
                    v.0 = tap(&lp.0, o.0, heads.0, g.0)
                    v.1 = tap(&lp.1, o.1, heads.1, g.1)
                    v.2 = tap(&lp.2, o.2, heads.2, g.2)
                    v.3 = tap(&lp.3, o.3, heads.3, g.3)
                    v.4 = tap(&lp.4, o.4, heads.4, g.4)
                    v.5 = tap(&lp.5, o.5, heads.5, g.5)
                    v.6 = tap(&lp.6, o.6, heads.6, g.6)
                    v.7 = tap(&lp.7, o.7, heads.7, g.7)
                    output[i] += gain * (v.0 + v.1 + v.2 + v.3 + v.4 + v.5 + v.6 + v.7)
                    // An 8-point Walsh–Hadamard transform, normalised: energy-preserving feedback.
                    let a0 = v.0 + v.1
                    let a1 = v.0 - v.1
                    let a2 = v.2 + v.3
                    let a3 = v.2 - v.3
                    let a4 = v.4 + v.5
                    let a5 = v.4 - v.5
                    let a6 = v.6 + v.7
                    let a7 = v.6 - v.7
                    let b0 = a0 + a2
                    let b1 = a1 + a3
                    let b2 = a0 - a2
                    let b3 = a1 - a3
                    let b4 = a4 + a6
                    let b5 = a5 + a7
                    let b6 = a4 - a6
                    let b7 = a5 - a7
                    let x = input[i]
                    let k: Float = 0.35355339
                    store[o.0 + heads.0] = (b0 + b4) * k + x
                    store[o.1 + heads.1] = (b1 + b5) * k + x
                    store[o.2 + heads.2] = (b2 + b6) * k + x
                    store[o.3 + heads.3] = (b3 + b7) * k + x
                    store[o.4 + heads.4] = (b0 - b4) * k + x
                    store[o.5 + heads.5] = (b1 - b5) * k + x
                    store[o.6 + heads.6] = (b2 - b6) * k + x
                    store[o.7 + heads.7] = (b3 - b7) * k + x
                    advance(&heads.0, l.0)
                    advance(&heads.1, l.1)
                    advance(&heads.2, l.2)
                    advance(&heads.3, l.3)
                    advance(&heads.4, l.4)
                    advance(&heads.5, l.5)
                    advance(&heads.6, l.6)
                    advance(&heads.7, l.7)
                }
            }
            // Input diffusion: four allpasses in series smear what enters the network, so its first pass is a wash, not
            // eight discrete echoes of the source.
            let diffuserMs = [4.77, 3.59, 12.73, 9.31]
            func diffuse(_ x: inout [Float]) {
                for ms in diffuserMs {
                    let m = Int(ms * fs / 1000)
                    var buf = [Float](repeating: 0, count: m)
                    var h = 0
                    let gAP: Float = 0.7
                    for i in 0..<x.count {
                        let delayed = buf[h]
                        let v = x[i] + gAP * delayed
                        x[i] = delayed - gAP * v
                        buf[h] = v
                        h = h + 1 == m ? 0 : h + 1
                    }
                }
            }
            diffuse(&send)
            let probeLength = Int(room.rt60 * fs)
            var impulse = [Float](repeating: 0, count: probeLength)
            impulse[0] = 1
            diffuse(&impulse)
            var response = [Float](repeating: 0, count: probeLength)
            impulse.withUnsafeBufferPointer { i in response.withUnsafeMutableBufferPointer { r in run(i, r, gain: 1) } }
            let measured = response.reduce(0.0) { $0 + Double($1) * Double($1) }
            // The send is scaled to 1 / critical distance, where the reverberant energy equals the direct sound's: the
            // network's impulse response then carries unit energy, less the part before its first delay (the early
            // reflections stand for that), at 60 dB per RT60.
            let tMix = lengthsMs[0] / 1000
            let wanted = exp(-13.8 * tMix / room.rt60)
            let gain = Float((wanted / max(measured, 1e-20)).squareRoot())
            send.withUnsafeBufferPointer { s in out.withUnsafeMutableBufferPointer { o in run(s, o, gain: gain) } }
        }
    }

    // MARK: Sources (each returns a dry signal with peak magnitude 1)

    enum ImpactModel: String { case driver, iron, mishit }

    /// Ball on a club head: a contact crack (a rise of 1–4 samples, a decay of 0.05–0.3 ms) exciting the head's modes.
    /// Driver: 4–6 modes, 2.5–9 kHz, τ 2–10 ms (a titanium face rings). Iron: 3–6 modes, 2–10 kHz, τ 0.6–3 ms.
    /// Mishit (toe, heel, thin): the same contact, but lower modes (1–5 kHz, τ 1–6 ms) louder than the crack, 4–12 dB
    /// quieter overall.
    static func impact(_ model: ImpactModel, fs: Double, g: inout Xoshiro) -> [Float] {
        let rise: Int
        let crackTau: Double
        let modes: Int
        let fRange: (Double, Double)
        let tauRange: (Double, Double)
        let modeLevel: (Double, Double)
        switch model {
        case .driver:
            rise = Int(g.range(1, 4.99))
            crackTau = g.range(0.00005, 0.0003)
            modes = Int(g.range(4, 6.99))
            fRange = (2500, 9000)
            tauRange = (0.002, 0.010)
            modeLevel = (0.2, 0.7)
        case .iron:
            rise = Int(g.range(1, 4.99))
            crackTau = g.range(0.00005, 0.0002)
            modes = Int(g.range(3, 6.99))
            fRange = (2000, 10_000)
            tauRange = (0.0006, 0.003)
            modeLevel = (0.15, 0.5)
        case .mishit:
            rise = Int(g.range(1, 6.99))
            crackTau = g.range(0.00005, 0.0002)
            modes = Int(g.range(2, 4.99))
            fRange = (1000, 5000)
            tauRange = (0.001, 0.006)
            modeLevel = (0.8, 1.5)
        }
        let longest = max(tauRange.1, crackTau) * 7
        let length = Int(longest * fs) + rise + 1
        var y = [Float](repeating: 0, count: length)
        let ct = crackTau * fs
        let polarity: Float = g.unit() < 0.5 ? 1 : -1
        for d in 0..<length {
            let v = d <= rise ? Double(d + 1) / Double(rise + 1) : exp(-Double(d - rise) / ct)
            y[d] = polarity * Float(v)
        }
        for _ in 0..<modes {
            let f = g.range(fRange.0, fRange.1)
            let tau = g.range(tauRange.0, tauRange.1) * fs
            let a = g.range(modeLevel.0, modeLevel.1)
            let phase = g.range(0, 2 * Double.pi)
            for d in 0..<length {
                // Modes build up over the contact's rise, then ring down.
                let build = d <= rise ? Double(d + 1) / Double(rise + 1) : 1
                y[d] += Float(a * build * exp(-Double(d) / tau) * sin(2 * Double.pi * f * Double(d) / fs + phase))
            }
        }
        normalise(&y)
        return y
    }

    /// A bag or club dropped on a mat: one or two 30–120 Hz modes with a 4–15 ms attack and τ 40–150 ms, and a soft slap
    /// (noise low-passed at 300–800 Hz) 12–20 dB down.
    static func thud(fs: Double, g: inout Xoshiro) -> [Float] {
        let attack = g.range(0.004, 0.015) * fs
        let length = Int(g.range(0.25, 0.6) * fs)
        var y = [Float](repeating: 0, count: length)
        for _ in 0..<(g.unit() < 0.5 ? 1 : 2) {
            let f = g.range(30, 120)
            let tau = g.range(0.04, 0.15) * fs
            let a = g.range(0.6, 1)
            for d in 0..<length {
                let env =
                    Double(d) < attack
                    ? 0.5 - 0.5 * cos(Double.pi * Double(d) / attack) : exp(-(Double(d) - attack) / tau)
                y[d] += Float(a * env * sin(2 * Double.pi * f * Double(d) / fs))
            }
        }
        var slap = (0..<Int(0.06 * fs)).map { _ in Float(g.gauss()) }
        lowPass(&slap, at: g.range(300, 800), fs: fs, poles: 2)
        let slapAttack = g.range(0.002, 0.005) * fs
        let slapLevel = Float(pow(10, -g.range(12, 20) / 20))
        normalise(&slap)
        for d in 0..<slap.count {
            let env = Double(d) < slapAttack ? Double(d) / slapAttack : exp(-(Double(d) - slapAttack) / (0.012 * fs))
            y[d] += slapLevel * Float(env) * slap[d]
        }
        normalise(&y)
        return y
    }

    /// A club's sole tapped on the mat 1–4 times, 0.15–0.4 s apart: a 0.5–1.5 ms rise, τ 3–10 ms, noise band-passed to
    /// 300–2500 Hz.
    static func clubTaps(fs: Double, g: inout Xoshiro) -> [Float] {
        let taps = Int(g.range(1, 4.99))
        var gaps: [Int] = [0]
        for _ in 1..<max(taps, 1) { gaps.append(gaps.last! + Int(g.range(0.15, 0.4) * fs)) }
        let one = Int(0.06 * fs)
        var y = [Float](repeating: 0, count: gaps.last! + one)
        for start in gaps {
            var burst = (0..<one).map { _ in Float(g.gauss()) }
            lowPass(&burst, at: g.range(1500, 2500), fs: fs, poles: 2)
            highPass(&burst, at: 300, fs: fs)
            let rise = g.range(0.0005, 0.0015) * fs
            let tau = g.range(0.003, 0.010) * fs
            let a = Float(g.range(0.5, 1))
            for d in 0..<one {
                let env = Double(d) < rise ? Double(d) / rise : exp(-(Double(d) - rise) / tau)
                y[start + d] += a * Float(env) * burst[d]
            }
        }
        normalise(&y)
        return y
    }

    /// A ball dropped on the mat: bounces with restitution 0.55–0.8 (first interval 0.25–0.5 s), each a soft contact
    /// (rise 0.6–1.5 ms, τ 2–5 ms) with its energy below 1.5–3 kHz.
    static func ballDrop(fs: Double, g: inout Xoshiro) -> [Float] {
        let e = g.range(0.55, 0.8)
        var interval = g.range(0.25, 0.5)
        var at = 0.0
        var times: [(Double, Double)] = []
        var a = 1.0
        while interval > 0.03, times.count < 8 {
            times.append((at, a))
            at += interval
            interval *= e
            a *= e
        }
        let one = Int(0.03 * fs)
        var y = [Float](repeating: 0, count: Int(at * fs) + one)
        let cutoff = g.range(1500, 3000)
        for (t, amp) in times {
            var burst = (0..<one).map { _ in Float(g.gauss()) }
            lowPass(&burst, at: cutoff, fs: fs, poles: 2)
            let rise = g.range(0.0006, 0.0015) * fs
            let tau = g.range(0.002, 0.005) * fs
            let start = Int(t * fs)
            for d in 0..<one {
                let env = Double(d) < rise ? Double(d) / rise : exp(-(Double(d) - rise) / tau)
                y[start + d] += Float(amp * env) * burst[d]
            }
        }
        normalise(&y)
        return y
    }

    /// One to three hand claps 0.3–0.6 s apart: the air between the palms as a resonance at 0.8–2.5 kHz (Q 3–8), rung by
    /// a short noise burst (rise 0.3–1 ms) and decaying with τ 4–12 ms.
    static func claps(fs: Double, g: inout Xoshiro) -> [Float] {
        let count = Int(g.range(1, 3.99))
        let one = Int(0.08 * fs)
        var starts: [Int] = [0]
        for _ in 1..<max(count, 1) { starts.append(starts.last! + Int(g.range(0.3, 0.6) * fs)) }
        var y = [Float](repeating: 0, count: starts.last! + one)
        for start in starts {
            let f = g.range(800, 2500)
            let q = g.range(3, 8)
            var r = Resonator(f: f, q: q, fs: fs)
            let rise = g.range(0.0003, 0.001) * fs
            let tau = g.range(0.004, 0.012) * fs
            for d in 0..<one {
                let env = Double(d) < rise ? Double(d) / rise : exp(-(Double(d) - rise) / tau)
                y[start + d] += r.step(Float(env) * Float(g.gauss()))
            }
        }
        normalise(&y)
        return y
    }

    /// Speech by formant synthesis: a glottal pulse train (f0 85–250 Hz, jittered) through three formant resonators
    /// per vowel, with fricatives (noise above 4 kHz) and plosives (a burst, then aspiration) between syllables, the
    /// consonants 8–20 dB under the vowels as in speech.
    static func voice(fs: Double, g: inout Xoshiro) -> [Float] {
        let syllables = Int(g.range(2, 8.99))
        let f0 = g.range(85, 250)
        var y: [Float] = []
        var consonants: [(start: Int, count: Int, belowDb: Double)] = []
        let vowels: [(Double, Double, Double)] = [
            (730, 1090, 2440), (530, 1840, 2480), (270, 2290, 3010), (570, 840, 2410), (300, 870, 2240),
            (660, 1720, 2410),
        ]
        for _ in 0..<syllables {
            // The consonant: a plosive burst, a fricative, or nothing.
            // Its level is set against the vowels' after synthesis (bursts 8–18 dB under them, fricatives 10–20 dB).
            let consonant = g.unit()
            if consonant < 0.35 {
                // A plosive: a burst (rise 0.5–1.5 ms, τ 2–6 ms), then 20–60 ms of aspiration into the vowel.
                let burstRise = g.range(0.0005, 0.0015) * fs
                let burstTau = g.range(0.002, 0.006) * fs
                let aspiration = g.range(0.02, 0.06) * fs
                var burst = (0..<Int(burstRise + burstTau * 4 + aspiration)).map { _ in Float(g.gauss()) }
                highPass(&burst, at: g.range(1500, 3500), fs: fs)
                for d in 0..<burst.count {
                    let t = Double(d)
                    let env =
                        t < burstRise
                        ? t / burstRise
                        : max(exp(-(t - burstRise) / burstTau), 0.25 * min(1, (t - burstRise) / aspiration))
                    burst[d] *= Float(env)
                }
                consonants.append((y.count, burst.count, g.range(8, 18)))
                y.append(contentsOf: burst)
            } else if consonant < 0.6 {
                var hiss = (0..<Int(g.range(0.05, 0.12) * fs)).map { _ in Float(g.gauss()) }
                highPass(&hiss, at: g.range(4000, 6000), fs: fs)
                let fade = Double(hiss.count) / 4
                for d in 0..<hiss.count { hiss[d] *= Float(min(1, Double(d) / fade, Double(hiss.count - d) / fade)) }
                consonants.append((y.count, hiss.count, g.range(10, 20)))
                y.append(contentsOf: hiss)
            }
            let v = vowels[Int(g.next() % UInt64(vowels.count))]
            var formants = [
                Resonator(f: v.0, q: 8, fs: fs), Resonator(f: v.1, q: 12, fs: fs), Resonator(f: v.2, q: 15, fs: fs),
            ]
            let length = Int(g.range(0.12, 0.3) * fs)
            let attack = 0.015 * fs
            var phase = 0.0
            let pitch = f0 * g.range(0.9, 1.15)
            for d in 0..<length {
                phase += pitch * (1 + 0.01 * Double(g.gauss())) / fs
                var pulse: Float = 0
                if phase >= 1 {
                    phase -= 1
                    pulse = 1
                }
                let env = Float(min(1, Double(d) / attack, Double(length - d) / attack))
                let s = formants[0].step(pulse) + 0.5 * formants[1].step(pulse) + 0.25 * formants[2].step(pulse)
                y.append(env * s)
            }
            y.append(contentsOf: [Float](repeating: 0, count: Int(g.range(0.04, 0.15) * fs)))
        }
        // Consonants at their level under the vowels' peak.
        var vowelPeak: Float = 0
        var isConsonant = [Bool](repeating: false, count: y.count)
        for c in consonants { for i in c.start..<(c.start + c.count) { isConsonant[i] = true } }
        for i in 0..<y.count where !isConsonant[i] { vowelPeak = max(vowelPeak, abs(y[i])) }
        for c in consonants {
            var peak: Float = 0
            for i in c.start..<(c.start + c.count) { peak = max(peak, abs(y[i])) }
            let gain = peak > 0 ? vowelPeak * Float(pow(10, -c.belowDb / 20)) / peak : 0
            for i in c.start..<(c.start + c.count) { y[i] *= gain }
        }
        normalise(&y)
        return y
    }

    /// Music through a speaker: 4–10 s of plucked chords (Karplus–Strong strings), a kick (a falling 50–120 Hz sine) and
    /// hi-hats (noise above 7 kHz, τ 15–60 ms) on a 90–140 bpm grid.
    static func music(fs: Double, g: inout Xoshiro) -> [Float] {
        let seconds = g.range(4, 10)
        var y = [Float](repeating: 0, count: Int(seconds * fs))
        let beat = 60 / g.range(90, 140)
        var t = 0.0
        var bar = 0
        let roots = [110.0, 130.81, 146.83, 164.81, 196.0]
        let hatTau = g.range(0.015, 0.06) * fs
        while t < seconds - 1 {
            let at = Int(t * fs)
            if bar % 4 == 0 {
                let root = roots[Int(g.next() % UInt64(roots.count))]
                for ratio in [1.0, 1.26, 1.5, 2.0] {
                    let period = Int(fs / (root * ratio * 2))
                    var ring = (0..<period).map { _ in Float(g.range(-1, 1)) }
                    var k = 0
                    for d in 0..<min(Int(beat * 4 * fs), y.count - at) {
                        let next = (k + 1) % period
                        let out = ring[k]
                        ring[k] = 0.498 * (ring[k] + ring[next])
                        k = next
                        y[at + d] += 0.25 * out
                    }
                }
            }
            if bar % 2 == 0 {
                for d in 0..<min(Int(0.15 * fs), y.count - at) {
                    let f = 50 + 70 * exp(-Double(d) / (0.03 * fs))
                    y[at + d] += Float(0.6 * exp(-Double(d) / (0.05 * fs)) * sin(2 * Double.pi * f * Double(d) / fs))
                }
            }
            var hat = (0..<min(Int(hatTau * 6), y.count - at)).map { _ in Float(g.gauss()) }
            highPass(&hat, at: 7000, fs: fs)
            for d in 0..<hat.count { y[at + d] += 0.15 * Float(exp(-Double(d) / hatTau)) * hat[d] }
            t += beat
            bar += 1
        }
        normalise(&y)
        return y
    }

    // MARK: The floor and the filters

    /// Pink noise (Kellet's filter) at −80…−60 dBFS (hard: −72…−50), mains hum with harmonics, and in `hard` a fan's
    /// low-passed rumble.
    /// Returns the pink noise's level, dBFS RMS.
    @discardableResult
    static func noiseFloor(_ x: inout [Float], kind: Kind, fs: Double, g: inout Xoshiro) -> Double {
        let floorDb = kind == .clean ? g.range(-80, -60) : g.range(-72, -50)
        var pinkNoise = [Float](repeating: 0, count: x.count)
        var b = [Float](repeating: 0, count: 7)
        var sum = 0.0
        for i in 0..<x.count {
            let w = Float(g.gauss())
            b[0] = 0.99886 * b[0] + w * 0.0555179
            b[1] = 0.99332 * b[1] + w * 0.0750759
            b[2] = 0.96900 * b[2] + w * 0.1538520
            b[3] = 0.86650 * b[3] + w * 0.3104856
            b[4] = 0.55000 * b[4] + w * 0.5329522
            b[5] = -0.7616 * b[5] - w * 0.0168980
            let pink = b[0] + b[1] + b[2] + b[3] + b[4] + b[5] + b[6] + w * 0.5362
            b[6] = w * 0.115926
            pinkNoise[i] = pink
            sum += Double(pink * pink)
        }
        let level = Float(pow(10, floorDb / 20) / max(1e-12, (sum / Double(max(1, x.count))).squareRoot()))
        for i in 0..<x.count { x[i] += level * pinkNoise[i] }
        let mains = g.unit() < 0.5 ? 50.0 : 60.0
        let hum = pow(10, g.range(-75, -50) / 20)
        for i in 0..<x.count {
            let t = Double(i) / fs
            x[i] += Float(
                hum
                    * (sin(2 * Double.pi * mains * t) + 0.4 * sin(2 * Double.pi * 3 * mains * t) + 0.2
                        * sin(2 * Double.pi * 5 * mains * t)))
        }
        if kind == .hard {
            var fan = (0..<x.count).map { _ in Float(g.gauss()) }
            lowPass(&fan, at: g.range(200, 600), fs: fs, poles: 2)
            let a = Float(pow(10, g.range(-62, -48) / 20)) * 3
            for i in 0..<x.count { x[i] += a * fan[i] }
        }
        return floorDb
    }

    /// Peak magnitude 1, and the last 5 ms faded out: a source cut off mid-sound would be a click no room makes.
    static func normalise(_ y: inout [Float]) {
        let peak = y.reduce(Float(0)) { max($0, abs($1)) }
        guard peak > 0 else { return }
        let fade = min(y.count / 2, 240)
        for i in 0..<y.count {
            let tail = y.count - 1 - i
            let w: Float = tail < fade ? Float(0.5 - 0.5 * cos(Double.pi * Double(tail) / Double(fade))) : 1
            y[i] = y[i] / peak * w
        }
    }

    /// Cascaded one-pole low-passes.
    static func lowPass(_ y: inout [Float], at f: Double, fs: Double, poles: Int) {
        let c = Float(1 - exp(-2 * Double.pi * f / fs))
        for _ in 0..<poles {
            var s: Float = 0
            for i in 0..<y.count {
                s += c * (y[i] - s)
                y[i] = s
            }
        }
    }

    /// A one-pole high-pass.
    static func highPass(_ y: inout [Float], at f: Double, fs: Double) {
        let c = Float(exp(-2 * Double.pi * f / fs))
        var prevX: Float = 0
        var prevY: Float = 0
        for i in 0..<y.count {
            let out = c * (prevY + y[i] - prevX)
            prevX = y[i]
            prevY = out
            y[i] = out
        }
    }

    static func highPass20(_ y: inout [Float], fs: Double) { highPass(&y, at: 20, fs: fs) }

    /// A two-pole band-pass resonator (constant peak gain).
    struct Resonator {
        var b0: Float, a1: Float, a2: Float
        var y1: Float = 0, y2: Float = 0
        init(f: Double, q: Double, fs: Double) {
            let w = 2 * Double.pi * f / fs
            let r = exp(-w / (2 * q))
            a1 = Float(2 * r * cos(w))
            a2 = Float(-r * r)
            b0 = Float(1 - r)
        }
        mutating func step(_ x: Float) -> Float {
            let y = b0 * x + a1 * y1 + a2 * y2
            y2 = y1
            y1 = y
            return y
        }
    }

    /// xoshiro256** (Blackman & Vigna), seeded through SplitMix64's mixer; Gaussian draws by Box–Muller.
    struct Xoshiro {
        var s: (UInt64, UInt64, UInt64, UInt64)
        var spare: Double?

        init(seed: UInt64) {
            var z = seed
            func mix() -> UInt64 {
                z &+= 0x9E37_79B9_7F4A_7C15
                var v = z
                v = (v ^ (v >> 30)) &* 0xBF58_476D_1CE4_E5B9
                v = (v ^ (v >> 27)) &* 0x94D0_49BB_1331_11EB
                return v ^ (v >> 31)
            }
            s = (mix(), mix(), mix(), mix())
        }

        mutating func next() -> UInt64 {
            let result = ((s.1 &* 5) << 7 | (s.1 &* 5) >> 57) &* 9
            let t = s.1 << 17
            s.2 ^= s.0
            s.3 ^= s.1
            s.1 ^= s.2
            s.0 ^= s.3
            s.2 ^= t
            s.3 = s.3 << 45 | s.3 >> 19
            return result
        }

        mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
        mutating func range(_ a: Double, _ b: Double) -> Double { a + (b - a) * unit() }

        mutating func gauss() -> Double {
            if let v = spare {
                spare = nil
                return v
            }
            let u1 = max(unit(), 1e-300)
            let u2 = unit()
            let r = (-2 * log(u1)).squareRoot()
            spare = r * sin(2 * Double.pi * u2)
            return r * cos(2 * Double.pi * u2)
        }
    }
}
