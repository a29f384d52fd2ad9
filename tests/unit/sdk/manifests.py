"""JobSet manifests covering every field of the API, for round-trip tests.

Written for these tests (shapes follow what users write: leader/workers, multislice,
failure policies, startup ordering, volumes...), plus objects as the server returns them
(status, managedFields) and deliberately odd ones (unknown fields, nulls, wrong types).
"""

from __future__ import annotations

MANIFESTS: dict[str, str] = {
    "minimal": """
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: minimal
spec:
  replicatedJobs:
  - name: workers
    template:
      spec:
        template:
          spec:
            containers:
            - name: main
              image: busybox
              command: [sleep, 10s]
""",
    "everything": """
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: everything
  namespace: ml
  generation: 3
  labels: {kueue.x-k8s.io/queue-name: team-a}
  annotations:
    alpha.jobset.sigs.k8s.io/exclusive-topology: cloud.google.com/gke-nodepool
    presets.jobset-py.dev/framework: pytorch
spec:
  suspend: true
  ttlSecondsAfterFinished: 600
  managedBy: example.com/my-controller
  coordinator: {replicatedJob: driver, jobIndex: 0, podIndex: 0}
  network:
    enableDNSHostnames: true
    subdomain: everything-net
    publishNotReadyAddresses: false
  successPolicy:
    operator: Any
    targetReplicatedJobs: [driver]
  startupPolicy: {startupPolicyOrder: AnyOrder}
  failurePolicy:
    maxRestarts: 5
    restartStrategy: BlockingRecreate
    rules:
    - name: failFast
      action: FailJobSet
      onJobFailureReasons: [PodFailurePolicy]
      onJobFailureMessagePatterns: ["exit code 42"]
      targetReplicatedJobs: [workers]
    - action: RestartJobSetAndIgnoreMaxRestarts
      onJobFailureReasons: [DeadlineExceeded, BackoffLimitExceeded]
  volumeClaimPolicies:
  - templates:
    - metadata: {name: checkpoints}
      spec:
        accessModes: [ReadWriteMany]
        resources: {requests: {storage: 10Gi}}
    retentionPolicy: {whenDeleted: Retain}
  replicatedJobs:
  - name: driver
    replicas: 1
    groupName: control
    template:
      metadata:
        labels: {role: driver}
        annotations: {presets.jobset-py.dev/port: "23456"}
      spec:
        parallelism: 1
        completions: 1
        backoffLimit: 0
        completionMode: Indexed
        activeDeadlineSeconds: 3600
        template:
          metadata:
            labels: {app: driver}
          spec:
            restartPolicy: Never
            serviceAccountName: trainer
            priorityClassName: high
            terminationGracePeriodSeconds: 30
            hostNetwork: false
            dnsPolicy: ClusterFirst
            nodeSelector: {cloud.google.com/gke-accelerator: nvidia-h100-80gb}
            tolerations:
            - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
            schedulingGates: [{name: example.com/quota}]
            affinity:
              nodeAffinity:
                requiredDuringSchedulingIgnoredDuringExecution:
                  nodeSelectorTerms:
                  - matchExpressions:
                    - {key: zone, operator: In, values: [a, b]}
            initContainers:
            - name: fetch
              image: busybox
              command: [sh, -c, "echo fetch"]
            - name: sidecar
              image: envoy
              restartPolicy: Always
            containers:
            - name: driver
              image: python:3.11
              command: [python, -c, "print(1)"]
              args: ["--epochs", "2"]
              workingDir: /work
              imagePullPolicy: IfNotPresent
              env:
              - {name: A, value: "1"}
              - name: POD_IP
                valueFrom: {fieldRef: {fieldPath: status.podIP}}
              envFrom: [{configMapRef: {name: settings}}]
              ports: [{containerPort: 29500, name: dist}]
              resources:
                requests: {cpu: "4", memory: 16Gi}
                limits: {nvidia.com/gpu: "8"}
              volumeMounts: [{name: checkpoints, mountPath: /ckpt}]
              securityContext: {privileged: true}
            volumes:
            - name: scratch
              emptyDir: {}
  - name: workers
    replicas: 4
    dependsOn:
    - {name: driver, status: Ready}
    template:
      spec:
        parallelism: 2
        completions: 2
        backoffLimitPerIndex: 1
        maxFailedIndexes: 1
        podReplacementPolicy: Failed
        podFailurePolicy:
          rules:
          - action: FailJob
            onExitCodes: {containerName: worker, operator: In, values: [42]}
        template:
          spec:
            containers:
            - name: worker
              image: busybox
              command: [sleep, 100s]
status:
  restarts: 2
  restartsCountTowardsMax: 1
  terminalState: Completed
  previousInPlaceRestartAttempt: 0
  currentInPlaceRestartAttempt: 1
  conditions:
  - type: Completed
    status: "True"
    observedGeneration: 3
    lastTransitionTime: "2024-05-01T10:00:00Z"
    reason: AllJobsCompleted
    message: jobset completed successfully
  replicatedJobsStatus:
  - {name: driver, ready: 0, succeeded: 1, failed: 0, active: 0, suspended: 0}
  - name: workers
    ready: 0
    succeeded: 4
    failed: 0
    active: 0
    suspended: 0
    jobRestarts: [0, 1, 0, 0]
    jobRestartsCountTowardsMax: [0, 1, 0, 0]
""",
    "in-order-groups": """
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  generateName: grouped-
spec:
  startupPolicy: {startupPolicyOrder: InOrder}
  replicatedJobs:
  - name: ps
    groupName: parameter-servers
    replicas: 2
    template:
      spec:
        template:
          spec:
            containers: [{name: ps, image: tf}]
  - name: workers
    groupName: compute
    replicas: 3
    template:
      spec:
        parallelism: 4
        completions: 8
        template:
          spec:
            containers: [{name: w, image: tf}]
""",
    "as-served": """
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: served
  namespace: default
  uid: 0f9c1f8e-7a3c-4c7e-9e1a-1b2c3d4e5f60
  resourceVersion: "12345"
  generation: 1
  creationTimestamp: "2024-05-01T09:59:00Z"
  finalizers: [example.com/keep]
  ownerReferences:
  - {apiVersion: v1, kind: ConfigMap, name: owner, uid: abc, controller: false}
  managedFields:
  - manager: kubectl
    operation: Apply
    apiVersion: jobset.x-k8s.io/v1alpha2
    time: "2024-05-01T09:59:00Z"
    fieldsType: FieldsV1
    fieldsV1: {f:spec: {f:replicatedJobs: {}}}
spec:
  network: {enableDNSHostnames: true, publishNotReadyAddresses: true}
  successPolicy: {operator: All}
  startupPolicy: {startupPolicyOrder: AnyOrder}
  suspend: false
  replicatedJobs:
  - name: rj
    replicas: 1
    groupName: default
    template:
      metadata: {}
      spec:
        completionMode: Indexed
        template:
          metadata: {creationTimestamp: null}
          spec:
            restartPolicy: OnFailure
            containers:
            - name: c
              image: busybox
              resources: {}
status:
  restarts: 0
  replicatedJobsStatus:
  - {name: rj, ready: 1, succeeded: 0, failed: 0, active: 1, suspended: 0}
""",
    "odd": """
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: odd
  labels: {version: 2}
  annotations: null
futureTopLevel: {x: 1}
spec:
  futureSpecField: [1, 2, 3]
  ttlSecondsAfterFinished: null
  suspend: "yes"
  network: {enableDNSHostnames: null, subdomain: odd, futureNetworkField: true}
  failurePolicy:
    maxRestarts: "3"
    rules: {not: a-list}
  replicatedJobs:
  - name: rj
    replicas: true
    unknownPerRJob: {deep: {er: [x]}}
    template:
      spec:
        parallelism: 2.5
        template:
          spec:
            containers:
            - name: c
              image: busybox
              env: [{name: A, value: 1}, {name: B, futureEnvField: z}]
              unknownContainerField: 7
            - plain string container
""",
}
