import PushWorkerTesting
import Testing

/// The testing kit's ledger of input and result ids: lost inputs, unknown results, duplicates per crash.
@Suite struct ResultLedgerTests {
    @Test func lostUnexpectedAndDuplicatesAreCountedPerCrash() {
        var ledger = ResultLedger()
        ["a", "b", "c", "d"].forEach { ledger.produced($0) }
        ledger.sawResult("a")
        ledger.sawResult("a")  // before any crash
        ledger.sawResult("b")
        ledger.crashed()
        ledger.sawResult("a")
        ledger.sawResult("b")
        ledger.sawResult("c")  // first result: not a duplicate
        ledger.crashed()
        ledger.crashed()
        ledger.sawResult("c")
        ledger.sawResult("x")  // no such input

        #expect(ledger.lost == ["d"])
        #expect(ledger.unexpected == ["x"])
        #expect(ledger.answered == 3)
        #expect(ledger.results == 8)
        #expect(ledger.duplicates == 4)
        #expect(ledger.duplicatesBeforeAnyCrash == 1)
        #expect(ledger.duplicatesPerCrash == [2, 0, 1])
        #expect(ledger.resultCounts["a"] == 3)
        #expect(ledger.summary == "inputs=4 answered=3 lost=1 unexpected=1 results=8 duplicates=4 perCrash=[2,0,1] beforeAnyCrash=1")
    }

    @Test func anInputProducedTwiceIsReportedNotMerged() {
        var ledger = ResultLedger()
        ledger.produced("a")
        ledger.produced("a")
        #expect(ledger.inputs == ["a"])
        #expect(ledger.repeatedInputs == ["a"])
        #expect(ledger.summary.hasSuffix(" repeatedInputs=1"))
        ledger.sawResult("a")
        #expect(ledger.lost.isEmpty && ledger.duplicates == 0)
    }
}
