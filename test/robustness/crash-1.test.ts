/**
 * Crash suite, part 1 of 2 (issue item 3): seeded runs over 5,000 generated rows against a
 * sandbox with latency, each SIGKILLed at a seeded moment and resumed to completion. The seeds
 * are split over two files so that the two test workers run them side by side.
 */
import { describeCrashSuite } from './_crash.js';

describeCrashSuite('crash and resume, part 1', [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
