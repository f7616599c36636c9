// SPDX-License-Identifier: GPL-2.0
/*
 * A KUnit suite with one passing and one failing case.  Loaded only by the
 * runner's self-test, to prove that a failing KUnit case fails the run.
 */
#include <kunit/test.h>
#include <linux/module.h>

static void pagehint_selftest_passes(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, 1 + 1, 2);
}

static void pagehint_selftest_fails(struct kunit *test)
{
	KUNIT_EXPECT_EQ_MSG(test, 1 + 1, 3, "failing on purpose");
}

static struct kunit_case pagehint_selftest_cases[] = {
	KUNIT_CASE(pagehint_selftest_passes),
	KUNIT_CASE(pagehint_selftest_fails),
	{}
};

static struct kunit_suite pagehint_selftest_suite = {
	.name = "pagehint_runner_selftest",
	.test_cases = pagehint_selftest_cases,
};
kunit_test_suite(pagehint_selftest_suite);

MODULE_DESCRIPTION("Deliberately failing KUnit suite for the test runner's self-test");
MODULE_LICENSE("GPL");
