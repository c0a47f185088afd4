package spec

// JudgeName names the task's judge: its strategy, and "on <model>" when
// it calls one ("" without a judge).
func (t *Task) JudgeName() string {
	if t.Judge == nil || t.Judge.Strategy == nil {
		return ""
	}
	if m := t.Judge.Model; m != nil && m.Spec.Provider != "none" {
		return t.Judge.Strategy.Name + " on " + m.Name
	}
	return t.Judge.Strategy.Name
}
