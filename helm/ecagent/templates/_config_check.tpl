{{/*
The duration bounds of .Values.config that values.schema.json cannot
state, since JSON Schema cannot compare durations: each key's range as
the agent's validator has it (generated into _config_bounds.tpl). The
schema has already checked each duration's form and every other key.
*/}}
{{- define "ecagent.checkConfigDurations" -}}
{{- range (include "ecagent.configDurationBounds" . | fromJson).bounds }}
{{- include "ecagent.checkDuration" (dict "v" $.Values.config "path" (splitList "." .key) "key" "config" "b" .) }}
{{- end }}
{{- end }}

{{/* Checks the duration at .path ("drives[]" walks a list) under .v. */}}
{{- define "ecagent.checkDuration" -}}
{{- if not .path }}
{{- $n := include "ecagent.durationNanos" .v | float64 }}
{{- $ok := true }}
{{- if and (hasKey .b "min") (lt $n .b.min) }}{{ $ok = false }}{{ end }}
{{- if and (hasKey .b "max") (gt $n .b.max) }}{{ $ok = false }}{{ end }}
{{- if and .b.zero (eq $n 0.0) }}{{ $ok = true }}{{ end }}
{{- if not $ok }}
{{- $problem := printf "%s: %v %s" .key .v .b.problem }}
{{- fail $problem }}
{{- /* helm lint turns fail into a notice; naming no template it cannot */}}
{{- include $problem . }}
{{- end }}
{{- else if kindIs "map" .v }}
{{- $seg := first .path }}
{{- $name := trimSuffix "[]" $seg }}
{{- if hasKey .v $name }}
{{- $key := printf "%s.%s" .key $name }}
{{- if hasSuffix "[]" $seg }}
{{- range $i, $item := get .v $name }}
{{- include "ecagent.checkDuration" (dict "v" $item "path" (rest $.path) "key" (printf "%s[%d]" $key $i) "b" $.b) }}
{{- end }}
{{- else }}
{{- include "ecagent.checkDuration" (dict "v" (get .v $name) "path" (rest .path) "key" $key "b" .b) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/* A duration ("1m30s", "250us", 0) in nanoseconds, as Go parses it. */}}
{{- define "ecagent.durationNanos" -}}
{{- $units := dict "ns" 1 "us" 1000 "µs" 1000 "μs" 1000 "ms" 1000000 "s" 1000000000 "m" 60000000000 "h" 3600000000000 }}
{{- $total := 0.0 }}
{{- range regexFindAll "[0-9.]+(ns|us|µs|μs|ms|s|m|h)" (toString .) -1 }}
{{- $num := regexFind "^[0-9.]+" . }}
{{- $total = addf $total (mulf (float64 $num) (get $units (trimPrefix $num .))) }}
{{- end }}
{{- floor $total }}
{{- end }}
