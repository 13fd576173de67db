import Checksum

extension ClipMeta {
    /// A meta.json for a bundle whose bytes stand in for a clip — benches and tests that move bundles, not capture
    /// them — listing `files` (name → bytes) with their sizes and XXH3s as a mint would, so a sender's check
    /// (`verifyBundle`) passes. Every capture figure in it is assumed; none was measured.
    public static func standIn(clipId: String, device: String, files: [String: [UInt8]]) -> ClipMeta {
        ClipMeta(
            clipId: clipId, session: "stand-in", sessionId: "20261201T091500Z-9f3c01ab", device: device,
            t0Ns: .init(2_500_000_000, "assumed", "a stand-in bundle: nothing was detected"),
            window: .init(
                startNs: 1_000_000_000, endNs: 4_000_000_000, firstFrameNs: 1_000_000_000,
                clipPreNs: .init(1_500_000_000, "assumed"),
                clipPostNs: .init(1_500_000_000, "assumed"), gaps: []),
            frames: 360,
            captureProfile: .init(
                width: 640, height: 360, framesPerSecond: 120, pixelFormat: "nv12", codec: "h264",
                videoBitrateBps: .init(8_000_000, "assumed"),
                fragmentSeconds: .init(0.5, "assumed"),
                frameStartToExposureOffsetNs: .init(0, "assumed", "added to every frame time"), source: [:]),
            candidate: .init(
                id: 1, onsetSample: 120_000, impactSample: 120_000.5, score: 0.9, features: ["snrDb": 30],
                decidedAtSample: 121_000, shotRule: "score ≥ 0.5"),
            tofCorrection: .init(samples: nil, provenance: "none declared"), audio: nil,
            timeline: .init(file: "index.bin", entries: 12),
            files: files.mapValues { File(bytes: $0.count, xxh3: XXH3.hex(XXH3.hash($0))) },
            createdAt: "2026-12-01T09:15:00Z")
    }
}
