import Testing

@testable import Config

@Suite("Config: derivations follow seed 000 §4")
struct DerivationTests {
    let c = Configuration.defaults

    @Test func ringWindowIsFragmentTimesCapacity() {
        #expect(c[.ringSeconds] == 10.0)
        #expect(c[.fragmentNs] == 500_000_000)
        #expect(c[.framesPerFragment] == 60)
    }

    @Test func footprintAndClipAtTheBitrate() {
        #expect(c[.ringFootprintBytes] == 62_500_000)  // seed: ≈62 MB
        #expect(c[.clipWindowNs] == 4_500_000_000)
        #expect(c[.clipBytes] == 28_125_000)  // seed: ≈28 MB
    }

    @Test func sessionVolumeUsesTheRealClipWindow() {
        #expect(c[.volumeSeconds] == 225)  // 50 × 4.5 s, not 50 × 3 s
        #expect(c[.volumeBytes] == 1_406_250_000)  // ≈1.4 GB
        #expect(c[.prdVolumeBytes] == 937_500_000)  // the PRD's ≈940 MB
    }

    @Test func storageFloorIsDerivedAndShownAsSuch() throws {
        let p = try #require(c["device.storageFloorBytes"])
        #expect(p.value == .integer(1_406_250_000 + 62_500_000))
        guard case .derived(let d) = p.provenance else {
            Issue.record("storage floor is \(p.provenance.mark), expected derived")
            return
        }
        #expect(d.inputs == ["session.volumeBytes", "capture.ringFootprintBytes"])
        #expect(d.arithmetic.contains("1468750000"))
    }

    @Test func derivedValuesFollowTheirInputs() throws {
        let c = try Configuration(overrides: [
            Override(key: "capture.fragmentCapacity", value: .integer(40), origin: "test"),
            Override(key: "capture.videoBitrateBps", value: .integer(20_000_000), origin: "test"),
        ])
        #expect(c[.ringSeconds] == 20)
        #expect(c[.ringFootprintBytes] == 50_000_000)
        #expect(c[.clipBytes] == 11_250_000)
    }

    @Test func detectDerivations() {
        #expect(abs(c[.speedOfSoundMps] - 343.42) < 1e-9)
        #expect(abs(c[.tofCorrectionSamples] - 1.5 / 343.42 * 48_000) < 1e-9)
        #expect(c[.audioRetentionBoundSeconds] == 300)  // 150 × 2 s
        #expect(c[.deadPeerTimeoutNs] == 3_000_000_000)
    }

    /// Every key seed 000 lists under "What the build should be parametrised with".
    @Test(arguments: [
        "capture.videoBitrateBps", "capture.fragmentSeconds", "capture.fragmentCapacity", "capture.ringSeconds",
        "capture.clipPreNs", "capture.clipPostNs", "capture.expectedFrameRate", "capture.allowFrameReordering",
        "capture.realTime", "detect.audioWindowNs", "detect.audioPreNs", "detect.maxRetainedCandidates",
        "detect.micToBallDefaultMetres", "link.heartbeatHz", "link.pumpTickIntervalNs", "link.syncBurstTarget",
        "link.controlCeilingBytesPerSec", "link.concurrentPayloadTransfers", "link.payloadPumpBudgetBytes",
        "host.ingestMinimumHeight", "host.ingestMinimumFPS", "device.settleEstimateMs", "device.storageFloorBytes",
    ])
    func seedParameterIsInTheCatalogue(key: String) {
        #expect(c[key] != nil, "\(key) missing from the catalogue")
    }

    @Test(arguments: [
        ("capture.videoBitrateBps", Provenance.Mark.assumed), ("capture.ringSeconds", .derived),
        ("capture.allowFrameReordering", .vendor), ("link.heartbeatHz", .vendor), ("host.ingestMinimumFPS", .vendor),
        ("link.syncBurstTarget", .assumed), ("detect.micToBallDefaultMetres", .assumed),
    ])
    func seedMarksAreKept(key: String, mark: Provenance.Mark) {
        #expect(c[key]?.provenance.mark == mark)
    }
}

@Suite("Config: nothing claims to be measured when it is not")
struct ProvenanceTests {
    @Test func noDefaultIsMeasured() {
        for p in Configuration.defaults.parameters {
            #expect(p.provenance.mark != .measured, "\(p.key) is measured without a rig run")
        }
    }

    @Test func aPersonsOverrideIsAssumed() throws {
        let c = try Configuration(overrides: [
            Override(key: "host.ingestMinimumFPS", value: .integer(240), origin: "--set")
        ])
        #expect(c["host.ingestMinimumFPS"]?.provenance == .assumed)  // was vendor; a person's value is not
        #expect(c["host.ingestMinimumFPS"]?.setBy == "--set")
    }

    @Test func aRecordMakesItMeasured() throws {
        let record = try MeasurementRecord(value: 40_000_000, date: "2026-11-30", instrument: "E-M2 sweep, rig 1")
        let c = try Configuration(overrides: [
            Override(key: "capture.videoBitrateBps", value: .integer(40_000_000), measurement: record, origin: "test")
        ])
        #expect(c["capture.videoBitrateBps"]?.provenance == .measured(record))
        let json = c.parameter(.videoBitrateBps).jsonObject
        #expect(json["provenance"] as? String == "measured")
        #expect((json["measurement"] as? [String: Any])?["instrument"] as? String == "E-M2 sweep, rig 1")
    }

    @Test(arguments: [
        (1.0, "2026-11-30", ""), (1.0, "30/11/2026", "rig"), (1.0, "2026-13-01", "rig"),
        (Double.nan, "2026-11-30", "rig"),
    ])
    func aRecordNeedsDateInstrumentAndFiniteValue(value: Double, date: String, instrument: String) {
        #expect(throws: ConfigError.self) { try MeasurementRecord(value: value, date: date, instrument: instrument) }
    }

    @Test func aRecordMustAgreeWithTheValue() throws {
        let record = try MeasurementRecord(value: 1, date: "2026-11-30", instrument: "rig")
        let error = #expect(throws: ConfigError.self) {
            try Configuration(overrides: [
                Override(key: "capture.videoBitrateBps", value: .integer(2), measurement: record, origin: "test")
            ])
        }
        #expect(error?.problems.first?.code == .invalidMeasurement)
    }

    @Test func derivedValuesCannotBeSet() {
        let error = #expect(throws: ConfigError.self) {
            try Configuration(overrides: [Override(key: "capture.ringSeconds", value: .real(12), origin: "--set")])
        }
        #expect(error?.problems.first?.code == .derivedNotSettable)
        #expect(error?.description.contains("capture.fragmentSeconds × capture.fragmentCapacity") == true)
    }

    @Test func derivedJSONCarriesItsArithmetic() throws {
        let json = try #require(Configuration.defaults["capture.ringSeconds"]).jsonObject
        let d = try #require(json["derivation"] as? [String: Any])
        #expect(d["formula"] as? String == "capture.fragmentSeconds × capture.fragmentCapacity")
        #expect((d["arithmetic"] as? String)?.contains("0.5 s") == true)
        #expect(json["measurement"] == nil)
    }
}

@Suite("Config: validation names keys and values")
struct ValidationTests {
    /// Problems found when the overrides are applied (a value outside its own range is refused there, before any
    /// derived value is computed from it) or when the result is validated.
    func problems(_ overrides: [(String, ParameterValue)]) throws -> [ConfigError.Problem] {
        do {
            return try Configuration(overrides: overrides.map { Override(key: $0.0, value: $0.1, origin: "test") })
                .validate()
        } catch {
            return error.problems
        }
    }

    @Test func everyNumberAParameterCanBeGivenHasARange() {
        for d in Catalog.definitions where d.type == .integer || d.type == .real {
            guard case .given = d.source else { continue }
            let ranged = d.constraints.contains {
                switch $0 {
                case .range, .hardLimit: true
                default: false
                }
            }
            #expect(ranged, "\(d.key) has no range: a value past what its arithmetic can hold would trap")
        }
    }

    /// Values that once trapped in derived arithmetic (`config check --set capture.fragmentCapacity=9e18`) are refused,
    /// each naming its key, value and range.
    @Test(arguments: [
        ("capture.fragmentCapacity", ParameterValue.integer(9_000_000_000_000_000_000)),
        ("capture.videoBitrateBps", .integer(9_000_000_000_000_000_000)),
        ("session.shots", .integer(9_000_000_000_000_000)),
        ("link.heartbeatHz", .real(1e-300)),
        ("capture.fragmentSeconds", .real(1e300)),
        ("detect.sampleRateHz", .integer(2_147_483_648)),
    ])
    func hugeValuesAreRefusedNotTrapped(key: String, value: ParameterValue) throws {
        let p = try problems([(key, value)])
        #expect(p.contains { $0.key == key && $0.message.contains("must be between") }, "\(p)")
    }

    @Test func defaultsAreValid() {
        #expect(Configuration.defaults.validate().isEmpty)
    }

    @Test func clipWindowMustFitTheRingWithAFragmentToSpare() throws {
        // 1.5 s + 8.5 s = 10 s fills the ring exactly: no fragment to spare.
        let p = try problems([("capture.clipPostNs", .integer(8_500_000_000))])
        #expect(p.count == 1)
        #expect(p[0].message.contains("capture.clipPostNs (8500000000 ns)"))
        #expect(p[0].message.contains("capture.ringSeconds (10 s)"))
        #expect(try problems([("capture.clipPostNs", .integer(8_000_000_000))]).isEmpty)
    }

    @Test func fragmentMustBeAWholeNumberOfFrames() throws {
        let p = try problems([("capture.expectedFrameRate", .integer(25))])
        #expect(p.count == 1)
        #expect(p[0].message.contains("12.5 frames"))
        #expect(p[0].key == "capture.fragmentSeconds")
    }

    @Test(arguments: [
        ("capture.videoBitrateBps", ParameterValue.integer(0), "must be between 100000 and 2000000000"),
        ("capture.fragmentSeconds", .real(-0.5), "must be between 0.01 and 10"),
        ("detect.maxRetainedCandidates", .integer(0), "must be between 1 and 100000"),
        ("capture.allowFrameReordering", .boolean(true), "hard limit is false"),
        ("capture.realTime", .boolean(false), "hard limit is true"),
        ("link.concurrentPayloadTransfers", .integer(2), "hard limit is 1"),
        ("detect.airTemperatureC", .real(90), "between -40 and 60"),
    ])
    func singleValueRules(key: String, value: ParameterValue, expected: String) throws {
        let p = try problems([(key, value)])
        #expect(p.contains { $0.key == key && $0.message.contains(expected) && $0.message.contains(value.description) })
    }

    @Test func audioPreRollMustBeShorterThanItsWindow() throws {
        let p = try problems([("detect.audioPreNs", .integer(2_000_000_000))])
        #expect(p.first?.message.contains("detect.audioPreNs (2000000000 ns)") == true)
    }

    @Test func unknownKeysAreNamedWithTheNearestOne() {
        let error = #expect(throws: ConfigError.self) {
            try Configuration(overrides: [Override(key: "capture.fragmentSecs", value: .real(1), origin: "--set")])
        }
        #expect(error?.description.contains("did you mean capture.fragmentSeconds?") == true)
    }

    @Test func wrongTypeNamesExpectedAndFound() {
        let error = #expect(throws: ConfigError.self) {
            try Configuration(overrides: [
                Override(key: "capture.fragmentCapacity", value: .text("lots"), origin: "--set")
            ])
        }
        #expect(error?.description.contains("expects integer, found text 'lots'") == true)
    }

    @Test func integersAreAcceptedForReals() throws {
        let c = try Configuration(overrides: [Override(key: "capture.fragmentSeconds", value: .integer(1), origin: "t")]
        )
        #expect(c[.ringSeconds] == 20)
    }

    @Test(arguments: [
        ("capture.videoBitrateBps=50_000_000", ParameterValue.integer(50_000_000)),
        ("capture.fragmentSeconds=0.25", .real(0.25)), ("capture.realTime=true", .boolean(true)),
    ])
    func commandLineAssignments(text: String, value: ParameterValue) throws {
        #expect(try Configuration.override(assignment: text).value == value)
    }

    @Test(arguments: ["capture.videoBitrateBps=fast", "noequals", "=5", "capture.realTime=yes"])
    func badCommandLineAssignments(text: String) {
        #expect(throws: ConfigError.self) { try Configuration.override(assignment: text) }
    }

    @Test func measuredFromTheCommandLine() throws {
        let o = try Configuration.override(
            assignment: "capture.videoBitrateBps=40000000", measured: "2026-11-30 E-M2 sweep")
        #expect(o.measurement?.instrument == "E-M2 sweep")
        #expect(throws: ConfigError.self) {
            try Configuration.override(assignment: "capture.videoBitrateBps=40000000", measured: "yesterday")
        }
    }
}

@Suite("Config: the seed's contradictions are surfaced")
struct ContradictionTests {
    @Test func syncBurstTextDerivesFromTheParameter() throws {
        let c = try Configuration(overrides: [Override(key: "link.syncBurstTarget", value: .integer(24), origin: "t")])
        let text = try #require(c.contradictions.first { $0.id == "sync-burst-count" }).text
        #expect(text.contains("burst of 24 probes"))
        #expect(!text.contains("16"))
    }

    @Test func clipWindowVersusPRDUsesValuesInForce() throws {
        let text = try #require(Configuration.defaults.contradictions.first { $0.id == "clip-window-vs-prd" }).text
        #expect(text.contains("4.5 s"))
        #expect(text.contains("225 s"))
        #expect(text.contains("1.41 GB"))
        // A 3 s window agrees with the PRD: the contradiction goes away.
        let agreed = try Configuration(overrides: [
            Override(key: "capture.clipPostNs", value: .integer(1_500_000_000), origin: "t")
        ])
        #expect(!agreed.contradictions.contains { $0.id == "clip-window-vs-prd" })
    }

    @Test func storageFloorIsAProposal() throws {
        let text = try #require(Configuration.defaults.contradictions.first { $0.id == "storage-floor-unset" }).text
        #expect(text.contains("1.47 GB"))
        #expect(text.contains("proposal"))
    }
}

@Suite("Config: typed keys")
struct TypedKeyTests {
    @Test func everyCatalogueParameterHasATypedKeyOfItsType() {
        let catalogue = Dictionary(uniqueKeysWithValues: Catalog.definitions.map { ($0.key, $0.type) })
        let typed = Dictionary(uniqueKeysWithValues: Configuration.typedKeys.map { ($0.name, $0.type) })
        #expect(typed == catalogue)
    }

    @Test func aTypedKeyReadsWhatItsNameReads() {
        let c = Configuration.defaults
        #expect(c[.clipPreNs] == 1_500_000_000 && c.parameter(.clipPreNs).key == "capture.clipPreNs")
        #expect(c[.fragmentSeconds] == 0.5)
        #expect(c[.allowFrameReordering] == false)
        #expect(c.real(.videoBitrateBps) == Double(c[.videoBitrateBps]))
    }
}
