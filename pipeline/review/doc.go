// Package review holds the verbs that look at a study, or at what it
// produced, without running it: what an apply would still do, what a
// change to a config does, how two runs differ, and how the shards of one
// study become one run. Each answers a question a person asks before or
// after paying for model calls, and none calls a model.
//
//   - plan (plan.go): per model, the cases, the calls still to make with
//     their best and worst count, the calls the journal already holds,
//     tokens and the cost range; in batch mode the waves and their
//     latency. MakePlanWith.
//   - diff of two configs (diff.go, diffcost.go): models, tasks,
//     strategies, the rendered prompts on a fixed item, matrix cells,
//     settings and metric blocks compared semantically (DiffStudies); and
//     what the change costs against a journal, the cases it invalidates or
//     adds apart from work neither config has done (MakeChangePlan).
//   - diff of two run folders (rundiff.go, rundiffverdicts.go): the metric
//     rows that changed, the paired accuracy difference per model x
//     strategy x task with its bootstrap interval, McNemar's p
//     (Holm-adjusted) and the items that flipped, and the judges' verdicts
//     case by case (CompareRuns). AnswerPolicy is the pairing rule, which
//     `promoral view` shares.
//   - merge (merge.go): the folders of `apply --shard k/N` checked to be
//     one whole study and joined into one run folder, as if one process
//     had run it (Merge).
//
// Review sits above the engine (package engine) in the flow: it reads a loaded
// spec.Study (pipeline/spec) and walks its cases, and neither spec nor
// pipeline knows anything of it. It uses only their exported API:
// engine.WalkCase on a ReplySource serves a case from the journal and
// the shared cache to see what is done, spec.ShapeOf gives a strategy's
// calls at best and at worst, spec.PromptEnv and spec.CallPlanner render
// what a stage would send, and engine.OpenOutputSet writes merge's outputs the
// way an apply writes them (results in case order, metrics computed afresh
// by package scoring's Scorer, the set switched in whole).
package review
