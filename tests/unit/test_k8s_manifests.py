"""deploy/k8s: every manifest is checked offline against the Kubernetes OpenAPI schema (the JSON
schemas bundled in kubernetes-validate, strict: unknown fields fail), the custom resources it
cannot know (Strimzi KafkaTopic, CloudNativePG Cluster) structurally, and all of it against the
code: the services hivemem/services.py runs, the environment variables the code reads, the
topics contracts/topics.py names, one image, the probes' routes and the pods' security."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from contracts.topics import DEFAULT_PARTITIONS, TopicNames
from hivemem import migrate_cli
from hivemem.kafka_topics import output_topics
from hivemem.services import PROCESSORS
from streams.kafka import OUTPUT_MAX_BYTES

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
# The oldest Kubernetes the manifests are meant for, and the newest the package has schemas for.
KUBE_VERSIONS = ("1.30.0", kubernetes_validate.latest_version())
# Custom resources: no schema in the package, so test_custom_resources checks their fields.
CUSTOM = {("kafka.strimzi.io/v1", "KafkaTopic"), ("postgresql.cnpg.io/v1", "Cluster")}
KUSTOMIZATION = ("kustomize.config.k8s.io/v1beta1", "Kustomization")
IMAGE = "hivemem"
SECRET = "hivemem-secrets"
# Read by the Python runtime or libraries, not by HiveMem: each is explained in configmap.yaml.
RUNTIME_ENV = {"PYTHONUNBUFFERED", "HOME"}
# Without these a pod cannot work: no broker, no database, or per-pod random secrets.
REQUIRED_ENV = {"HIVEMEM_KAFKA_BOOTSTRAP", "HIVEMEM_DATABASE_URL", "HIVEMEM_CONFIG", "HIVEMEM_HOME"}
# Where the services' code lives (not tests, not benchmarks): env names must be read here.
CODE_DIRS = ("contracts", "governance", "inference", "producers", "streams", "processors", "projections", "hivemem")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")

Doc = dict[str, Any]


def _load(path: Path) -> list[Doc]:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    assert all(isinstance(d, dict) for d in docs), f"{path}: every YAML document must be a mapping"
    return docs


FILES = sorted(p for p in K8S.rglob("*") if p.suffix in (".yaml", ".yml"))
DOCS: list[tuple[Path, Doc]] = [(p, d) for p in FILES for d in _load(p)]
OBJECTS = [(p, d) for p, d in DOCS if (d.get("apiVersion"), d.get("kind")) != KUSTOMIZATION]
KUSTOMIZATIONS = [(p, d) for p, d in DOCS if (d.get("apiVersion"), d.get("kind")) == KUSTOMIZATION]
BUILTIN = [(p, d) for p, d in OBJECTS if (d.get("apiVersion"), d.get("kind")) not in CUSTOM]


def _id(path: Path, doc: Doc) -> str:
    return f"{path.relative_to(K8S)}:{doc.get('kind')}/{doc.get('metadata', {}).get('name')}"


def _of(*kinds: str) -> list[Doc]:
    return [d for _, d in OBJECTS if d["kind"] in kinds]


WORKLOADS = ("Deployment", "StatefulSet")  # the gate is a StatefulSet: its pods are named instances


def _pod_specs() -> list[tuple[str, Doc]]:
    return [(f"{d['kind']}/{d['metadata']['name']}", d["spec"]["template"]["spec"]) for d in _of(*WORKLOADS, "Job")]


def _pod_labels(workload: Doc) -> dict[str, str]:
    return dict(workload["spec"]["template"]["metadata"]["labels"])


def _containers(pod: Doc) -> list[Doc]:
    return [*pod.get("initContainers", []), *pod["containers"]]


def _service_of(deployment: Doc) -> list[str]:
    """The ``hivemem.services`` arguments of a Deployment's main container."""
    (main,) = deployment["spec"]["template"]["spec"]["containers"]
    cmd = main["command"]
    assert cmd[:3] == ["python", "-m", "hivemem.services"], f"{deployment['metadata']['name']}: {cmd}"
    return list(cmd[3:])


def _quantity(value: str | int) -> float:
    text = str(value)
    for suffix, factor in (("Ki", 2**10), ("Mi", 2**20), ("Gi", 2**30), ("m", 1e-3)):
        if text.endswith(suffix):
            return float(text.removesuffix(suffix)) * factor
    return float(text)


def _code_env_names() -> dict[str, set[str]]:
    """Per source file, the string constants that are exactly an env name (a docstring that
    mentions one is not): what the code looks up, with os.environ or a mapping passed in."""
    found: dict[str, set[str]] = {}
    for folder in CODE_DIRS:
        for path in (ROOT / folder).rglob("*.py"):
            names = {n.value for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Constant)
                     and isinstance(n.value, str) and re.fullmatch(r"HIVEMEM_[A-Z0-9_]+", n.value)}  # fmt: skip
            if names:
                found[str(path.relative_to(ROOT))] = names
    return found


def _config_map(name: str) -> dict[str, str]:
    matches = [d for d in _of("ConfigMap") if d["metadata"]["name"] == name]
    assert len(matches) == 1, f"ConfigMap {name} is referenced but not defined once"
    return dict(matches[0]["data"])


def _env(container: Doc) -> dict[str, str | None]:
    """Name -> value of a container's environment (None: from a Secret)."""
    env: dict[str, str | None] = {}
    for source in container.get("envFrom", []):
        env.update(_config_map(source["configMapRef"]["name"]))
    for var in container.get("env", []):
        env[var["name"]] = var.get("value")
    return env


def test_the_manifests_are_there() -> None:
    kinds = {d["kind"] for _, d in OBJECTS}
    assert {"Deployment", "Job", "Service", "PodDisruptionBudget", "ConfigMap", "KafkaTopic", "Cluster"} <= kinds


def _validate(doc: Doc, version: str, label: str) -> None:
    problem = ""
    try:
        kubernetes_validate.validate(doc, version, strict=True)
    except kubernetes_validate.ValidationError as exc:
        problem = f"against Kubernetes {version}: {'.'.join(str(p) for p in exc.path)}: {exc.message[:300]}"
    except kubernetes_validate.SchemaNotFoundError as exc:
        problem = f"{exc.message} (a custom resource must be listed in CUSTOM and checked)"
    if problem:  # outside the handler: the schema dump of the original error would bury the point
        pytest.fail(f"{label} {problem}")


@pytest.mark.parametrize("version", KUBE_VERSIONS)
@pytest.mark.parametrize(("path", "doc"), BUILTIN, ids=[_id(p, d) for p, d in BUILTIN])
def test_objects_match_the_kubernetes_schema(path: Path, doc: Doc, version: str) -> None:
    """Everything but the custom resources (CUSTOM, checked in test_custom_resources); an
    object of a kind the package has no schema for fails rather than passing unchecked."""
    _validate(doc, version, _id(path, doc))


def test_kustomizations_apply_every_manifest_once() -> None:
    listed: list[Path] = []
    for path, k in KUSTOMIZATIONS:
        for entry in k.get("resources", []):
            assert (path.parent / entry).is_file(), f"{path}: resource {entry} does not exist"
            listed.append((path.parent / entry).resolve())
        for gen in k.get("configMapGenerator", []):
            for entry in gen.get("files", []):
                assert (path.parent / entry).is_file(), f"{path}: generator file {entry} does not exist"
    # The secret example is documentation of a shape, deliberately applied by nobody.
    expected = {p.resolve() for p in FILES if p.name != "kustomization.yaml" and not p.name.endswith(".example.yaml")}
    assert sorted(listed) == sorted(expected), "every manifest must be in exactly one kustomization"


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed (optional; not downloaded)")
@pytest.mark.parametrize("path", [p for p, _ in KUSTOMIZATIONS], ids=lambda p: str(p.parent.relative_to(K8S)))
def test_kustomize_builds(path: Path) -> None:
    """What `kubectl apply -k` would send: generated names resolved, images rewritten."""
    out = subprocess.run(["kubectl", "kustomize", str(path.parent)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    for doc in (d for d in yaml.safe_load_all(out.stdout) if d):
        if (doc["apiVersion"], doc["kind"]) not in CUSTOM:
            _validate(doc, KUBE_VERSIONS[-1], f"kustomize {path.parent.name}: {doc['kind']}/{doc['metadata']['name']}")


def _services_in_code() -> set[str]:
    """The names ``hivemem.services.main`` dispatches on (``which == "gate"``, ...)."""
    tree = ast.parse((ROOT / "hivemem" / "services.py").read_text())
    main = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main")
    known: set[str] = set()
    for node in ast.walk(main):
        if isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) and node.left.id == "which":
            known |= {c.value for c in node.comparators if isinstance(c, ast.Constant) and isinstance(c.value, str)}
    return known


def test_every_service_is_deployed_once_with_a_command_the_code_knows() -> None:
    known = _services_in_code()
    assert {"gate", "governance", "caml", "kmms", "kmp", "projectors", "api"} <= known, "services.py changed shape"
    deployed = [_service_of(d) for d in _of(*WORKLOADS)]
    assert sorted(args[0] for args in deployed) == sorted(known)
    for args in deployed:
        # Only the projectors take names (a subset of read models), e.g. to split them over pods.
        assert not args[1:] or (args[0] == "projectors" and set(args[1:]) <= set(PROCESSORS)), args


def test_env_names_are_ones_the_code_reads() -> None:
    by_file = _code_env_names()
    read = set().union(*by_file.values())
    settings = by_file["hivemem/settings.py"]
    assert settings >= REQUIRED_ENV | {"HIVEMEM_API_HOST", "HIVEMEM_API_PORT"}
    for where, pod in _pod_specs():
        for c in _containers(pod):
            env = _env(c)
            unknown = {n for n in env if n not in read and n not in RUNTIME_ENV}
            assert not unknown, f"{where}/{c['name']}: no code reads {sorted(unknown)}"
            assert env.keys() >= REQUIRED_ENV, f"{where}/{c['name']}: missing {sorted(REQUIRED_ENV - env.keys())}"
            for var in c.get("env", []):
                if "secretKeyRef" in var.get("valueFrom", {}):
                    assert var["valueFrom"]["secretKeyRef"]["name"] == SECRET


def test_secret_references_match_the_example_secret() -> None:
    (example,) = _load(K8S / "examples" / "secret.example.yaml")
    assert example["metadata"]["name"] == SECRET
    keys = set(example["stringData"])
    for where, pod in _pod_specs():
        for c in _containers(pod):
            for var in c.get("env", []):
                if "secretKeyRef" in var.get("valueFrom", {}):
                    assert var["valueFrom"]["secretKeyRef"]["key"] in keys, f"{where}: {var}"
        for vol in pod.get("volumes", []):
            if "secret" in vol:
                assert vol["secret"]["secretName"] == SECRET
                assert {i["key"] for i in vol["secret"]["items"]} <= keys, f"{where}: {vol}"
    config = tomllib.loads(example["stringData"]["tenants.toml"])
    assert {"token_secret", "app_db_password"} <= config["api"].keys() and config["tenants"]


def test_tenants_file_is_mounted_where_hivemem_config_points() -> None:
    for where, pod in _pod_specs():
        secret_vols = {v["name"]: v["secret"] for v in pod["volumes"] if "secret" in v}
        for c in pod["containers"]:
            path = Path(str(_env(c)["HIVEMEM_CONFIG"]))
            mounts = [m for m in c["volumeMounts"] if m["name"] in secret_vols and Path(m["mountPath"]) == path.parent]
            assert mounts, f"{where}: nothing mounted at {path.parent}"
            assert path.name in {i["path"] for i in secret_vols[mounts[0]["name"]]["items"]}


def test_one_image_and_restricted_pods() -> None:
    (base,) = [k for p, k in KUSTOMIZATIONS if p.parent == K8S]
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert base["images"] == [{"name": IMAGE, "newName": IMAGE, "newTag": version}]
    for where, pod in _pod_specs():
        # Service links would inject HIVEMEM_API_PORT=tcp://... from the Service hivemem-api.
        assert pod["enableServiceLinks"] is False, where
        assert pod["automountServiceAccountToken"] is False and pod["serviceAccountName"] == "hivemem", where
        sc = pod["securityContext"]
        assert sc["runAsNonRoot"] is True and sc["runAsUser"] > 0 and sc["seccompProfile"]["type"] == "RuntimeDefault"
        volumes = {v["name"] for v in pod["volumes"]}
        for c in _containers(pod):
            name = f"{where}/{c['name']}"
            assert c["image"] == IMAGE, name
            # die_with_parent() stops a service whose parent is PID 1: no shell or init in front.
            assert c["command"][0] == "python", name
            csc = c["securityContext"]
            assert csc["readOnlyRootFilesystem"] is True and csc["allowPrivilegeEscalation"] is False, name
            assert csc["capabilities"]["drop"] == ["ALL"], name
            mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
            assert "/tmp" in mounts and set(mounts.values()) <= volumes, name
            res = c["resources"]
            for r in ("cpu", "memory"):
                assert _quantity(res["requests"][r]) <= _quantity(res["limits"][r]), f"{name}: {r}"


def test_migrations_run_with_the_images_own_code() -> None:
    # The Job and every Deployment's init container run hivemem.migrate_cli from the image: nothing mounted.
    steps = {f"python -m hivemem.migrate_cli {step}" for step in migrate_cli.STEPS}
    for where, pod in _pod_specs():
        assert not [v for v in pod["volumes"] if "configMap" in v], where
        for c in pod.get("initContainers", []):
            assert " ".join(c["command"]) == "python -m hivemem.migrate_cli wait", where
    init = {c["name"] for d in _of(*WORKLOADS) for c in d["spec"]["template"]["spec"]["initContainers"]}
    assert init == {"wait-for-migrations"}, "every Deployment waits for the migrations"
    (job,) = _of("Job")
    command = " ".join(job["spec"]["template"]["spec"]["containers"][0]["command"])
    assert command == "python -m hivemem.migrate_cli migrate" and command in steps
    (base,) = [k for p, k in KUSTOMIZATIONS if p.parent == K8S]
    assert "configMapGenerator" not in base


def test_the_migrate_step_checks_topics_and_partitions() -> None:
    names = TopicNames().all_topics()
    ok = dict.fromkeys(names, DEFAULT_PARTITIONS)
    assert migrate_cli.topic_problems(ok, names) == []
    broken = {**ok, names[0]: DEFAULT_PARTITIONS + 1}
    del broken[names[1]]
    assert migrate_cli.topic_problems(broken, names) == [f"{names[1]}: missing",
                                                         f"{names[0]}: 4 partitions, HiveMem needs 3"]  # fmt: skip
    assert migrate_cli.POLL_S > 0
    assert migrate_cli.main(["nope"]) == 2


def test_api_is_served_probed_and_budgeted() -> None:
    (api,) = [d for d in _of("Deployment") if _service_of(d) == ["api"]]
    (main,) = api["spec"]["template"]["spec"]["containers"]
    env, ports = _env(main), {p["name"]: p["containerPort"] for p in main["ports"]}
    assert env["HIVEMEM_API_HOST"] == "0.0.0.0" and ports["http"] == int(str(env["HIVEMEM_API_PORT"]))
    routes = {r for f in (ROOT / "projections" / "http").glob("*.py")
              for r in re.findall(r"\.get\(\s*\"(/[^\"]*)\"", f.read_text())}  # fmt: skip
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert main[probe]["httpGet"]["path"] in routes and main[probe]["httpGet"]["port"] in ports, probe
    (svc,) = [s for s in _of("Service") if s["spec"]["selector"].items() <= _pod_labels(api).items()]
    assert {p["targetPort"] for p in svc["spec"]["ports"]} <= ports.keys()


def test_every_deployment_has_its_own_disruption_budget() -> None:
    deployments = _of(*WORKLOADS)
    for pdb in _of("PodDisruptionBudget"):
        sel = pdb["spec"]["selector"]["matchLabels"].items()
        hits = [d["metadata"]["name"] for d in deployments if sel <= _pod_labels(d).items()]
        assert len(hits) == 1, f"{pdb['metadata']['name']} selects {hits}"
        # One pod at a time: never the active processor and its standby together.
        assert pdb["spec"]["maxUnavailable"] == 1
    assert len(_of("PodDisruptionBudget")) == len(deployments)
    for d in deployments:
        assert d["spec"]["selector"]["matchLabels"].items() <= _pod_labels(d).items()
        assert d["spec"]["replicas"] >= 2, f"{d['metadata']['name']}: a standby (processors) or a second pod (api)"


def test_kafka_topics_are_the_ones_the_code_uses() -> None:
    prefix = _config_map("hivemem-config")["HIVEMEM_TOPIC_PREFIX"]
    names = TopicNames(prefix)
    topics = _of("KafkaTopic")
    by_topic = {t["spec"]["topicName"]: t for t in topics}
    assert len(by_topic) == len(topics), "a topic is declared twice"
    assert sorted(by_topic) == sorted(names.all_topics())
    outputs = set(output_topics(names))
    for name, t in by_topic.items():
        meta, spec, config = t["metadata"], t["spec"], t["spec"]["config"]
        assert DNS_SUBDOMAIN.match(meta["name"]), f"{meta['name']}: not a valid object name"
        assert spec["partitions"] == DEFAULT_PARTITIONS and spec["replicas"] == 3, name
        assert str(config["min.insync.replicas"]) == "2", name
        assert config["message.timestamp.type"] == "LogAppendTime" and str(config["retention.ms"]) == "-1", name
        big = config.get("max.message.bytes")
        assert (int(big) == OUTPUT_MAX_BYTES) if name in outputs else big is None, name
    assert len({t["metadata"]["name"] for t in topics}) == len(topics)


def test_custom_resources() -> None:
    strimzi = next(k for p, k in KUSTOMIZATIONS if p.parent.name == "strimzi")
    cluster = next(label["pairs"]["strimzi.io/cluster"] for label in strimzi["labels"])
    # The Topic Operator only manages topics in its namespace with its cluster's label; the
    # bootstrap HiveMem connects to must be that same cluster's.
    bootstrap = _config_map("hivemem-config")["HIVEMEM_KAFKA_BOOTSTRAP"]
    assert bootstrap == f"{cluster}-kafka-bootstrap.{strimzi['namespace']}.svc:9092"
    (pg,) = _of("Cluster")
    spec = pg["spec"]
    assert spec["instances"] >= 2 and spec["storage"]["size"] and "standard" in spec["imageName"]
    initdb = spec["bootstrap"]["initdb"]
    assert "CREATE EXTENSION IF NOT EXISTS vector" in initdb["postInitApplicationSQL"]
    (owner,) = [r for r in spec["managed"]["roles"] if r["name"] == initdb["owner"]]
    assert owner["createrole"] is True and owner["login"] is True and owner["ensure"] == "present"
    (example,) = _load(K8S / "examples" / "secret.example.yaml")
    url = example["stringData"]["database-url"]
    assert f"@{pg['metadata']['name']}-rw." in url and url.endswith(f"/{initdb['database']}")
    assert url.startswith(f"postgresql://{initdb['owner']}:")


def test_services_whose_processors_split_run_each_pod_as_an_instance() -> None:
    """HIVEMEM_INSTANCE makes a parallel processor join its consumer group as that instance: every service with
    one (all but the projectors) is a StatefulSet whose pods name themselves (their stable names)."""
    from processors.caml.core import CamlProcessor
    from processors.caml.embedder import EmbedderProcessor
    from processors.clam.core import ClamProcessor
    from processors.gate.core import GateProcessor
    from processors.kmms.consolidator import KmmsConsolidatorProcessor
    from processors.kmms.core import KmmsProcessor
    from processors.kmms.embedder import KmmsEmbedderProcessor
    from processors.kmms.enricher import KmmsEnricherProcessor
    from processors.kmp.core import KmpProcessor
    from processors.kstar.core import KstarProcessor
    from processors.votes.core import GovernanceProcessor

    split = [GateProcessor, GovernanceProcessor, EmbedderProcessor, KmmsProcessor, KmmsEnricherProcessor,
             KmmsConsolidatorProcessor, KmmsEmbedderProcessor, KmpProcessor, KstarProcessor, ClamProcessor]  # fmt: skip
    assert all(getattr(c, "parallel", False) for c in split) and not getattr(CamlProcessor, "parallel", False)
    named = {}
    for d in _of(*WORKLOADS):
        (main,) = d["spec"]["template"]["spec"]["containers"]
        refs = {v["name"]: v.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") for v in main.get("env", [])}
        if "HIVEMEM_INSTANCE" in refs:
            named[d["metadata"]["name"]] = (d["kind"], refs["HIVEMEM_INSTANCE"])
    assert named == {f"hivemem-{s}": ("StatefulSet", "metadata.name")
                     for s in ("gate", "governance", "caml", "kmms", "kmp", "kstar")}  # fmt: skip
