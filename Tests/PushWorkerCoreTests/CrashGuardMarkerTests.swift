import PushWorkerCore
import Testing

/// `CrashGuardMarker`: the crash guard's metadata text, read from bytes any client may have committed.
@Suite struct CrashGuardMarkerTests {
    @Test(arguments: [
        CrashGuardMarker(lease: 0, ending: .clean), CrashGuardMarker(lease: 1041, ending: .open(cleared: nil)),
        CrashGuardMarker(lease: 1041, ending: .open(cleared: 20)),
        CrashGuardMarker(lease: 999_999_999_999_999_999, ending: .running(offset: 20, deaths: 2, cleared: nil)),
        CrashGuardMarker(lease: 999_999_999_999_999_999, ending: .running(offset: 999_999_999_999_999_999, deaths: 1_000_000, cleared: 999_999_999_999_999_999)),
    ])
    func aMarkerReadsBackFromItsText(_ marker: CrashGuardMarker) {
        #expect(CrashGuardMarker(bytes: marker.bytes) == marker)
    }

    @Test func theTextIsReadableInKafkaTools() {
        #expect(String(decoding: CrashGuardMarker(lease: 1041, ending: .running(offset: 20, deaths: 2, cleared: nil)).bytes, as: UTF8.self)
                == "pushworker-crash-guard/1 lease=1041 running=20 deaths=2")
        #expect(String(decoding: CrashGuardMarker(lease: 1041, ending: .running(offset: 20, deaths: 2, cleared: 17)).bytes, as: UTF8.self)
                == "pushworker-crash-guard/1 lease=1041 running=20 deaths=2 cleared=17")
        #expect(String(decoding: CrashGuardMarker(lease: 7, ending: .clean).bytes, as: UTF8.self) == "pushworker-crash-guard/1 lease=7 clean")
        #expect(String(decoding: CrashGuardMarker(lease: 7, ending: .open(cleared: 3)).bytes, as: UTF8.self) == "pushworker-crash-guard/1 lease=7 cleared=3")
    }

    @Test(arguments: [
        "", "lease=1", "pushworker-crash-guard/1 ", "pushworker-crash-guard/2 lease=1", "pushworker-crash-guard/1 lease=",
        "pushworker-crash-guard/1 lease=-1", "pushworker-crash-guard/1 lease=1x", "pushworker-crash-guard/1 lease=1 dirty",
        "pushworker-crash-guard/1 lease=1  clean", "pushworker-crash-guard/1 lease=1 clean ", "pushworker-crash-guard/1 lease=1 running=2",
        "pushworker-crash-guard/1 lease=1 running=2 deaths=1000001", "pushworker-crash-guard/1 lease=9999999999999999999",
        "pushworker-crash-guard/1 lease=1\u{0} clean", "pushworker-crash-guard/1 lease=１",
        "pushworker-crash-guard/1 lease=1 running=2 deaths=3 extra", "pushworker-crash-guard/1 lease=1 cleared=",
        "pushworker-crash-guard/1 lease=1 cleared=2 clean", "pushworker-crash-guard/1 lease=1 running=2 deaths=3 cleared=",
        "pushworker-crash-guard/1 lease=1 running=2 deaths=3 cleared=1 clean", "pushworker-crash-guard/1 lease=1 running=2 cleared=1 deaths=3",
    ])
    func anythingElseIsNotAMarker(_ text: String) {
        #expect(CrashGuardMarker(bytes: Array(text.utf8)) == nil)
    }

    @Test func aLongTextIsNotAMarker() {
        let text = "pushworker-crash-guard/1 lease=" + String(repeating: "0", count: 180) + "1"
        #expect(CrashGuardMarker(bytes: Array(text.utf8)) == nil)
    }
}
