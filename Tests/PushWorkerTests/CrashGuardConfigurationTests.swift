import Foundation
@testable import PushWorker
import Testing

/// The `crashGuard` configuration key: defaults, parsing, bounds, the environment, and check-config's output.
@Suite struct CrashGuardConfigurationTests {
    @Test func onByDefaultWithThreeDeathsAndLeasesOfAThousand() throws {
        let configuration = try ExactlyOnceConfigurationTests.load("{ groupId: 'workers' }")
        #expect(configuration.crashGuard == CrashGuardConfiguration(enabled: true, deathLimit: 3, leaseRecords: 1000))
        let description = configuration.effectiveDescription()
        #expect(description.contains(#""group" : "workers.crash-guard""#), "\(description)")
    }

    @Test func theFileAndTheEnvironmentSetIt() throws {
        let configuration = try ExactlyOnceConfigurationTests.load("{ crashGuard: { deathLimit: 5, leaseRecords: 200 } }")
        #expect(configuration.crashGuard == CrashGuardConfiguration(enabled: true, deathLimit: 5, leaseRecords: 200))
        #expect(try !ExactlyOnceConfigurationTests.load("{ crashGuard: { enabled: false } }").crashGuard.enabled)
        #expect(try !ExactlyOnceConfigurationTests.load("{}", environment: ["PUSHWORKER_CRASH_GUARD": "false"]).crashGuard.enabled)
        #expect(try ExactlyOnceConfigurationTests.load("{ crashGuard: { enabled: false } }", environment: ["PUSHWORKER_CRASH_GUARD": "yes"]).crashGuard.enabled)
        #expect(ExactlyOnceConfigurationTests.errorKey("{}", environment: ["PUSHWORKER_CRASH_GUARD": "maybe"]) == "PUSHWORKER_CRASH_GUARD")
    }

    @Test(arguments: ["{ crashGuard: { deathLimit: 0 } }", "{ crashGuard: { deathLimit: 1001 } }", "{ crashGuard: { leaseRecords: 0 } }",
                      "{ crashGuard: { leaseRecords: 1000001 } }", "{ crashGuard: { deathlimit: 3 } }", "{ crashGuard: { enabled: 'yes' } }"])
    func outOfRangeAndUnknownKeysAreRefused(_ text: String) {
        #expect(ExactlyOnceConfigurationTests.errorKey(text)?.hasPrefix("crashGuard.") == true, "\(text)")
    }
}
